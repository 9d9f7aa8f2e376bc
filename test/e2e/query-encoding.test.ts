// Query values are read as browsers, HTML forms and URLSearchParams write them (the document says
// so in its introduction): `+` is a space and `%2B` a plus sign, so `?event_name=add+to+cart`
// finds the events named "add to cart". In a path, `+` is itself. Checked on the event search
// (GET /mcp/events, by name and by user) and the event analytics (GET /mcp/analytics/events/{name}),
// with the generated client (which writes `%20` and `%2B`) giving the same answers as a form encoder.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;
let mcp: TallyClient;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  mcp = createTallyClient({ baseUrl: server.url, mcpApiKey: tenant.mcpKey });
  for (const [event_name, user_id] of [
    ['add to cart', 'ann smith'],
    ['add to cart', 'ann+smith'],
    ['a+b', 'ann smith'],
    ['add+to+cart', 'ann+smith'],
  ]) {
    const { error } = await tenant.client.eventsTrack({ body: { event_name: event_name!, user_id: user_id! } });
    expect(error).toBeUndefined();
  }
});
afterAll(() => server?.close());

/** GET /mcp/events with a query string written by hand. */
async function events(query: string): Promise<{ event_name: string; user_id: string }[]> {
  const res = await fetch(`${server.url}/mcp/events?app_id=${tenant.app.id}&${query}`, {
    headers: { 'x-mcp-api-key': tenant.mcpKey },
  });
  const body = (await res.json()) as { events: { event_name: string; user_id: string }[] };
  expect(res.status, `${query}: ${JSON.stringify(body)}`).toBe(200);
  return body.events.map(({ event_name, user_id }) => ({ event_name, user_id })).sort(byFields);
}

const byFields = (a: { event_name: string; user_id: string }, b: { event_name: string; user_id: string }) =>
  `${a.event_name}|${a.user_id}`.localeCompare(`${b.event_name}|${b.user_id}`);

describe('+ in query values', () => {
  it('is a space, as a form encoder means it', async () => {
    const form = new URLSearchParams({ event_name: 'add to cart' }).toString();
    expect(form).toBe('event_name=add+to+cart');
    expect(await events(form)).toEqual([
      { event_name: 'add to cart', user_id: 'ann smith' },
      { event_name: 'add to cart', user_id: 'ann+smith' },
    ]);
    expect(await events('event_name=add%20to%20cart')).toEqual(await events(form));
  });

  it('%2B is a plus sign', async () => {
    expect(await events('event_name=a%2Bb')).toEqual([{ event_name: 'a+b', user_id: 'ann smith' }]);
    expect(await events('event_name=add%2Bto%2Bcart')).toEqual([{ event_name: 'add+to+cart', user_id: 'ann+smith' }]);
    expect(await events('event_name=a+b')).toEqual([]); // "a b": no such event
  });

  it('applies to every query value, the user filter too', async () => {
    expect((await events('user_id=ann+smith')).map((e) => e.event_name)).toEqual(['a+b', 'add to cart']);
    expect((await events('user_id=ann%2Bsmith')).map((e) => e.event_name)).toEqual(['add to cart', 'add+to+cart']);
  });

  it('the generated client encodes spaces and plus signs so that they arrive as written', async () => {
    const spaced = await mcp.mcpEvents({ query: { app_id: tenant.app.id, event_name: 'add to cart' } });
    expect(spaced.data!.events.map((e) => e.user_id).sort()).toEqual(['ann smith', 'ann+smith']);
    const plus = await mcp.mcpEvents({ query: { app_id: tenant.app.id, event_name: 'a+b' } });
    expect(plus.data!.events.map((e) => e.event_name)).toEqual(['a+b']);
  });
});

describe('+ in a path', () => {
  it('is itself: /mcp/analytics/events/a+b is the event "a+b"', async () => {
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const period = `start_date=${day(-30)}&end_date=${day(1)}`;
    const total = async (path: string) => {
      const res = await fetch(`${server.url}/mcp/analytics/events/${path}?app_id=${tenant.app.id}&${period}`, {
        headers: { 'x-mcp-api-key': tenant.mcpKey },
      });
      const body = (await res.json()) as { total_events: number };
      expect(res.status, `${path}: ${JSON.stringify(body)}`).toBe(200);
      return body.total_events;
    };
    expect(await total('a+b')).toBe(1);
    expect(await total('a%2Bb')).toBe(1);
    expect(await total('add%20to%20cart')).toBe(2);
  });
});
