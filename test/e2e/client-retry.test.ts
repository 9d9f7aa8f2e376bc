// @tally/client's retries and timeouts against a scripted local server: it waits as Retry-After
// asks (seconds and HTTP-date), repeats only calls that are safe to repeat, gives events an
// insert_id and idempotent POSTs an Idempotency-Key that stay the same across attempts, and turns
// failures without an answer into error envelopes.
import { createTallyClient, type RetryInfo, retryAfterMs } from '@tally/client';
import { afterEach, describe, expect, it } from 'vitest';
import { envelope, type ScriptedServer, type Step, startScripted } from '../helpers/scripted-http.js';

let scripted: ScriptedServer | undefined;
afterEach(async () => {
  await scripted?.close();
  scripted = undefined;
});

async function clientFor(
  steps: Step[],
  options: Parameters<typeof createTallyClient>[0] extends infer O ? Partial<O> : never = {},
) {
  scripted = await startScripted(steps);
  const retries: RetryInfo[] = [];
  const client = createTallyClient({
    baseUrl: scripted.url,
    apiKey: 'tk_live_test',
    adminToken: 'tk_admin_test',
    retry: { baseDelay: 10, onRetry: (info) => retries.push(info) },
    ...options,
  });
  return { client, retries, arrivals: scripted.arrivals };
}

const list = { query: { app_id: 'app-1' } };
const ok = { status: 200, body: { success: true, data: [] } };
const rateLimited = (retryAfter: string) => ({
  ...envelope('RATE_LIMIT_EXCEEDED', 429),
  headers: { 'Retry-After': retryAfter },
});

describe('Retry-After', () => {
  it('waits the seconds a 429 asks for before the retry', async () => {
    const { client, retries, arrivals } = await clientFor([rateLimited('1'), ok]);
    const { error, response } = await client.audiencesList(list);
    expect(error).toBeUndefined();
    expect(response.status).toBe(200);
    expect(arrivals).toHaveLength(2);
    expect(arrivals[1]!.at - arrivals[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(retries).toEqual([expect.objectContaining({ attempt: 1, status: 429 })]);
    expect(retries[0]!.delay).toBeGreaterThanOrEqual(1000);
  });

  it('waits until an HTTP-date Retry-After', async () => {
    const until = Math.ceil((Date.now() + 2000) / 1000) * 1000; // HTTP-dates have whole seconds
    const { client, arrivals } = await clientFor([rateLimited(new Date(until).toUTCString()), ok]);
    const { response } = await client.audiencesList(list);
    expect(response.status).toBe(200);
    // Not before that date (timers round to the millisecond).
    expect(arrivals[1]!.wall).toBeGreaterThanOrEqual(until - 2);
    expect(arrivals[1]!.at - arrivals[0]!.at).toBeGreaterThanOrEqual(900);
  });

  it('returns the 429 at once when the wait asked for is longer than maxDelay', async () => {
    const { client, arrivals } = await clientFor([rateLimited('120'), ok], { retry: { maxDelay: 5_000 } });
    const { error, response } = await client.audiencesList(list);
    expect(response.status).toBe(429);
    expect(error?.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(arrivals).toHaveLength(1);
  });

  it('reads delay-seconds and HTTP-dates, and ignores anything else', () => {
    const now = Date.parse('2026-11-26T08:00:00Z');
    expect(retryAfterMs('7', now)).toBe(7000);
    expect(retryAfterMs('Thu, 26 Nov 2026 08:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Thu, 26 Nov 2026 07:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-3', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });
});

describe('what is retried', () => {
  const unavailable = envelope('SERVICE_UNAVAILABLE', 503);

  it('retries reads on 5xx until they succeed, and gives up after maxRetries', async () => {
    const { client, arrivals } = await clientFor([unavailable, unavailable, ok]);
    expect((await client.audiencesList(list)).response.status).toBe(200);
    expect(arrivals).toHaveLength(3);

    const again = await clientFor([unavailable], { retry: { baseDelay: 1, maxRetries: 2 } });
    const { error } = await again.client.audiencesList(list);
    expect(error?.code).toBe('SERVICE_UNAVAILABLE');
    expect(again.arrivals).toHaveLength(3);
  });

  it('sends nothing twice without retry turned on', async () => {
    const { client, arrivals } = await clientFor([unavailable, ok], { retry: undefined });
    expect((await client.audiencesList(list)).error?.code).toBe('SERVICE_UNAVAILABLE');
    expect((await client.eventsTrack({ body: { event_name: 'e', user_id: 'u' } })).response.status).toBe(200);
    expect(arrivals).toHaveLength(2);
    expect(JSON.parse(arrivals[1]!.body)).not.toHaveProperty('insert_id');
  });

  it('never repeats calls that are not safe to repeat', async () => {
    const { client, arrivals } = await clientFor([unavailable]);
    await client.analyticsQuery({ body: { sql: 'select 1' } as never });
    await client.usersErase({ path: { user_id: 'u-1' } });
    await client.websiteTrackEvent({ body: { app_id: 'a', visitor_id: 'v', event_name: 'e' } as never });
    await client.adminAppsCreate({ body: { name: 'x' } as never });
    await client.adminAppsUpdate({ path: { app_id: 'a' }, body: { name: 'y' } as never });
    expect(arrivals.map((a) => `${a.method} ${a.path}`)).toEqual([
      'POST /v1/analytics/query',
      'DELETE /v1/users/u-1',
      'POST /v1/website/events',
      'POST /admin/v1/apps',
      'PATCH /admin/v1/apps/a',
    ]);
    expect(arrivals.every((a) => a.headers['idempotency-key'] === undefined)).toBe(true);
  });

  it('does not retry 4xx answers other than 429, nor 501', async () => {
    const { client, arrivals } = await clientFor([envelope('NOT_IMPLEMENTED', 501)]);
    expect((await client.audiencesList(list)).error?.code).toBe('NOT_IMPLEMENTED');
    const second = await clientFor([envelope('INVALID_REQUEST', 400)]);
    expect((await second.client.audiencesList(list)).error?.code).toBe('INVALID_REQUEST');
    expect(arrivals).toHaveLength(1);
    expect(second.arrivals).toHaveLength(1);
  });
});

describe('events carry an insert_id', () => {
  it('gives each event of a batch without one an insert_id, the same on every attempt', async () => {
    const { client, arrivals } = await clientFor([envelope('INTERNAL_ERROR', 500), 'drop', ok]);
    const events = [
      { event_name: 'a', user_id: 'u' },
      { event_name: 'b', user_id: 'u', insert_id: 'mine-1' },
    ];
    const { response } = await client.eventsTrackBatch({ body: { events } });
    expect(response.status).toBe(200);
    expect(arrivals).toHaveLength(3);
    const sent = arrivals.map((a) => JSON.parse(a.body).events as { insert_id: string }[]);
    expect(sent[0]![0]!.insert_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[0]![1]!.insert_id).toBe('mine-1');
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[2]).toEqual(sent[0]);
    expect(events[0]).not.toHaveProperty('insert_id'); // the caller's objects are left alone
  });

  it('gives a single event one too', async () => {
    const { client, arrivals } = await clientFor(['drop', ok]);
    await client.eventsTrack({ body: { event_name: 'e', user_id: 'u' } });
    expect(arrivals).toHaveLength(2);
    const [first, second] = arrivals.map((a) => JSON.parse(a.body).insert_id as string);
    expect(first).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).toBe(first);
  });
});

describe('POSTs with an Idempotency-Key', () => {
  it('sends a generated key, the same on every attempt, and retries a 409 that asks to wait', async () => {
    const running = { ...envelope('CONFLICT', 409), headers: { 'Retry-After': '1' } };
    const { client, arrivals } = await clientFor([envelope('INTERNAL_ERROR', 500), running, ok]);
    const { response } = await client.usersUpsert({ body: { user_id: 'u-1' } as never });
    expect(response.status).toBe(200);
    expect(arrivals).toHaveLength(3);
    const keys = arrivals.map((a) => a.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
  });

  it("keeps the caller's own key, and does not retry a 409 without Retry-After", async () => {
    const { client, arrivals } = await clientFor([envelope('CONFLICT', 409), ok]);
    const { error } = await client.pushSend({
      body: { user_ids: ['u'], title: 't', message: 'm' } as never,
      headers: { 'Idempotency-Key': 'order-42-receipt' },
    });
    expect(error?.code).toBe('CONFLICT');
    expect(arrivals).toHaveLength(1);
    expect(arrivals[0]!.headers['idempotency-key']).toBe('order-42-receipt');
  });
});

describe('timeouts and failures without an answer', () => {
  it('abandons an attempt after the timeout, and retries it when the call is safe', async () => {
    const slow = { ...ok, delay: 5_000 };
    const { client, arrivals, retries } = await clientFor([slow, ok], { timeout: 300 });
    const { response } = await client.audiencesList(list);
    expect(response.status).toBe(200);
    expect(arrivals).toHaveLength(2);
    expect(retries[0]!.status).toBeUndefined();
  });

  it('returns TIMEOUT, NETWORK_ERROR and ABORTED envelopes', async () => {
    const { client } = await clientFor([{ ...ok, delay: 5_000 }], { retry: false });
    const timedOut = await client.audiencesList({ ...list, timeout: 200 });
    expect(timedOut.error).toMatchObject({ success: false, code: 'TIMEOUT' });
    const aborted = await client.audiencesList({ ...list, signal: AbortSignal.abort() });
    expect(aborted.error?.code).toBe('ABORTED');
    await scripted!.close();
    const down = await client.audiencesList(list);
    expect(down.error?.code).toBe('NETWORK_ERROR');
  });

  it('stops waiting for a retry when the caller aborts', async () => {
    const { client, arrivals } = await clientFor([rateLimited('20'), ok]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const { error } = await client.audiencesList({ ...list, signal: controller.signal });
    expect(error?.code).toBe('ABORTED');
    expect(arrivals).toHaveLength(1);
  });

  it('wraps an answer that is not JSON in an envelope', async () => {
    const { client } = await clientFor(
      [{ status: 502, raw: '<html>Bad Gateway</html>', headers: { 'Content-Type': 'text/html' } }],
      {
        retry: false,
      },
    );
    const { error } = await client.audiencesList(list);
    expect(error).toMatchObject({ code: 'UNEXPECTED_RESPONSE', details: { status: 502 } });
    expect(error?.message).toContain('Bad Gateway');
  });
});
