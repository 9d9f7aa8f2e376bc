// Erasure (DELETE /v1/users/{user_id} and its admin twin): through an alias the whole user goes,
// with every row that names them, in one transaction; afterwards no REST query, metric, audience
// count, MCP GET, MCP tool or resource, or export returns anything of the user; derived counts
// (event dictionary, daily volumes, dedup) follow; other users and other tenants are untouched;
// a later event with the same id starts an unrelated user; each erasure is in the audit trail.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let a: Tenant;
let b: Tenant;
let admin: TallyClient;
let audienceId: string;
let victimId: string;

const SECRET = 'victim-secret-value';
const T = (d: number, h = 10) => `2026-03-${String(d).padStart(2, '0')}T${String(h).padStart(2, '0')}:00:00Z`;

async function seedVictim(t: Tenant, userId: string, alias: string): Promise<string> {
  const { error } = await t.client.eventsTrackBatch({
    body: {
      events: [
        { user_id: userId, event_name: 'signup', timestamp: T(2), properties: { note: SECRET } },
        { user_id: userId, event_name: 'purchase', timestamp: T(3), properties: { revenue: 40 }, insert_id: 'ins-v' },
        { user_id: userId, event_name: 'victim_only_event', timestamp: T(4) },
      ],
    },
  });
  expect(error).toBeUndefined();
  expect(
    (await t.client.usersUpsert({ body: { user_id: userId, email: 'victim@example.com' } })).error,
  ).toBeUndefined();
  expect((await t.client.usersCreateAlias({ body: { user_id: userId, alias_id: alias } })).error).toBeUndefined();
  const user = await server.db.knex('users').where({ app_id: t.app.id, external_id: userId }).first();
  // A visit, a Web Push subscription and a delivery, as the website and push paths store them.
  const knex = server.db.knex;
  await knex('visits').insert({
    id: uuidv7(),
    app_id: t.app.id,
    user_id: user.id,
    visitor_id: alias,
    visit_url: `https://example.com/${SECRET}`,
    is_bot: false,
    created_at: new Date(T(2)),
  });
  await knex('push_subscriptions').insert({
    id: uuidv7(),
    app_id: t.app.id,
    user_id: user.id,
    endpoint: `https://push.example.com/${SECRET}/${t.app.id}`,
    p256dh: 'p',
    auth: 'a',
  });
  await knex('push_deliveries').insert({
    id: uuidv7(),
    app_id: t.app.id,
    user_id: user.id,
    provider: 'webhook',
    title: 'Hi',
    message: SECRET,
    status: 'sent',
  });
  return user.id as string;
}

beforeAll(async () => {
  server = await startTestServer();
  a = await server.createTenant();
  b = await server.createTenant();
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
  victimId = await seedVictim(a, 'victim', 'victim-alias');
  await seedVictim(b, 'victim', 'victim-alias');
  const { error } = await a.client.eventsTrackBatch({
    body: {
      events: [
        { user_id: 'bystander', event_name: 'signup', timestamp: T(2, 11) },
        { user_id: 'bystander', event_name: 'purchase', timestamp: T(3, 11), properties: { revenue: 10 } },
      ],
    },
  });
  expect(error).toBeUndefined();
  const audience = await a.client.audiencesCreate({
    body: { app_id: a.app.id, name: 'Buyers', criteria: 'users who did purchase' },
  });
  expect(audience.data?.user_count).toBe(2);
  audienceId = audience.data!.audience_id;
}, 60_000);
afterAll(() => server?.close());

const mcpGet = async (t: Tenant, url: string) => {
  const res = await fetch(`${server.url}${url}`, { headers: { 'x-mcp-api-key': t.mcpKey } });
  return { status: res.status, text: await res.text() };
};

async function mcpClient(t: Tenant) {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { 'X-MCP-API-Key': t.mcpKey } },
  });
  const client = new Client({ name: 'privacy-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

describe('erasing a user', () => {
  it('through an alias erases the whole user and says what went', async () => {
    const { data, error, response } = await a.client.usersErase({ path: { user_id: 'victim-alias' } });
    expect(error).toBeUndefined();
    expect(response.headers.get('x-ratelimit-limit')).toBeNull(); // RATE_LIMITS=off in tests
    expect(data).toEqual({
      success: true,
      erased: {
        users: 1,
        aliases: 1,
        events: 3,
        visits: 1,
        push_subscriptions: 1,
        deliveries: 1,
        queued_sends_cancelled: 0,
      },
    });
  });

  it('leaves no row that names the user, nor the dedup row of its events', async () => {
    const knex = server.db.knex;
    for (const table of ['events', 'visits', 'push_subscriptions', 'push_deliveries', 'user_aliases']) {
      expect(Number((await knex(table).where({ user_id: victimId }).count('* as n').first())!.n), table).toBe(0);
    }
    expect(await knex('users').where({ id: victimId }).first()).toBeUndefined();
    expect(await knex('event_dedup').where({ app_id: a.app.id, insert_id: 'ins-v' }).first()).toBeUndefined();
    expect(await knex('event_dedup').where({ app_id: b.app.id, insert_id: 'ins-v' }).first()).toBeDefined();
  });

  it('answers 404 for either id afterwards, on erase and export', async () => {
    for (const id of ['victim', 'victim-alias']) {
      expect((await a.client.usersErase({ path: { user_id: id } })).response.status).toBe(404);
      expect((await a.client.usersExport({ path: { user_id: id } })).response.status).toBe(404);
      expect((await admin.adminPrivacyExportUser({ path: { app_id: a.app.id, user_id: id } })).response.status).toBe(
        404,
      );
    }
  });

  it('corrects the event dictionary and daily volumes', async () => {
    const client = await mcpClient(a);
    try {
      const result = await client.callTool({ name: 'list_event_dictionary', arguments: { app_id: a.app.id } });
      const text = JSON.stringify(result);
      expect(text).not.toContain('victim_only_event');
      const dictionary = result.structuredContent as { events: { event_name: string }[] };
      expect(dictionary.events.map((e) => e.event_name).sort()).toEqual(['purchase', 'signup']);
      const read = await client.readResource({ uri: `tally://apps/${a.app.id}/event-dictionary` });
      expect(JSON.stringify(read)).not.toContain('victim_only_event');
      const events = await client.callTool({ name: 'query_events', arguments: { app_id: a.app.id } });
      expect(JSON.stringify(events)).not.toContain(SECRET);
      expect((events.structuredContent as { pagination: { total: number } }).pagination.total).toBe(2);
    } finally {
      await client.close();
    }
    const definitions = await server.db.knex('event_definitions').where({ app_id: a.app.id }).orderBy('event_name');
    expect(definitions.map((d) => [d.event_name, Number(d.volume)])).toEqual([
      ['purchase', 1],
      ['signup', 1],
    ]);
    const signup = definitions.find((d) => d.event_name === 'signup');
    expect(new Date(signup.first_seen).toISOString()).toBe(new Date(T(2, 11)).toISOString());
    const days = await server.db
      .knex('event_daily_counts')
      .where({ app_id: a.app.id })
      .orderBy(['event_name', 'day'])
      .select('event_name', 'count');
    expect(days.map((d) => [d.event_name, Number(d.count)])).toEqual([
      ['purchase', 1],
      ['signup', 1],
    ]);
  });

  it('is gone from queries, metrics, audiences and MCP GETs', async () => {
    const dau = await a.client.analyticsMetrics({
      query: { app_id: a.app.id, metric: 'dau', granularity: 'day', start_date: '2026-03-01', end_date: '2026-03-05' },
    });
    expect(dau.error, JSON.stringify(dau.error)).toBeUndefined();
    expect(dau.data!.data.map((d) => d.value)).toEqual([0, 1, 1, 0, 0]);
    const audience = await mcpGet(a, `/mcp/resources/audiences/${audienceId}`);
    expect(audience.status).toBe(200);
    expect(JSON.parse(audience.text)).toMatchObject({ user_count: 1 });
    expect(audience.text).not.toContain('victim');
    for (const url of [
      '/mcp/users/victim',
      '/mcp/users/victim-alias',
      `/mcp/events?app_id=${a.app.id}&user_id=victim`,
      `/mcp/events?app_id=${a.app.id}&user_id=victim-alias`,
    ]) {
      expect((await mcpGet(a, url)).status, url).toBe(404);
    }
    for (const url of [
      `/mcp/events?app_id=${a.app.id}`,
      `/mcp/resources/audiences?app_id=${a.app.id}`,
      `/mcp/analytics/events/victim_only_event?app_id=${a.app.id}&start_date=2026-03-01&end_date=2026-03-31`,
      `/mcp/analytics/events/signup?app_id=${a.app.id}&start_date=2026-03-01&end_date=2026-03-31`,
    ]) {
      const got = await mcpGet(a, url);
      expect(got.status, url).toBe(200);
      expect(got.text, url).not.toContain(SECRET);
      expect(got.text, url).not.toContain(victimId);
    }
    const only = JSON.parse(
      (
        await mcpGet(
          a,
          `/mcp/analytics/events/victim_only_event?app_id=${a.app.id}&start_date=2026-03-01&end_date=2026-03-31`,
        )
      ).text,
    );
    expect(only.total_events).toBe(0);
  });

  it('leaves the same id in another tenant untouched', async () => {
    const res = await fetch(`${server.url}/v1/users/victim/export`, {
      headers: { authorization: `Bearer ${b.apiKey}` },
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.events).toHaveLength(3);
    expect(body.aliases).toEqual([expect.objectContaining({ alias_id: 'victim-alias' })]);
  });

  it('lets a later event with the same id start a new, unrelated user', async () => {
    await a.client.eventsTrack({ body: { user_id: 'victim', event_name: 'comeback' } });
    const user = await server.db.knex('users').where({ app_id: a.app.id, external_id: 'victim' }).first();
    expect(user.id).not.toBe(victimId);
    expect(Number(user.event_count)).toBe(1);
    expect(user.email).toBeNull();
    const exported = await (
      await fetch(`${server.url}/v1/users/victim/export`, { headers: { authorization: `Bearer ${a.apiKey}` } })
    ).json();
    expect(exported.aliases).toEqual([]);
    expect(exported.events.map((e: { event_name: string }) => e.event_name)).toEqual(['comeback']);
    expect(JSON.stringify(exported)).not.toContain(SECRET);
    // the alias of the erased user is free again
    expect((await a.client.usersErase({ path: { user_id: 'victim-alias' } })).response.status).toBe(404);
  });

  it('records the erasure in the audit trail: actor, id, counts, never the data', async () => {
    const { data } = await admin.adminPrivacyAudit({ path: { app_id: a.app.id } });
    const erasure = data!.items.find((i) => i.action === 'user.erase');
    expect(erasure).toMatchObject({
      actor: a.apiKeyId,
      actor_kind: 'rest',
      campaign_id: null,
      user_id: 'victim-alias',
      completed: true,
      counts: { users: 1, aliases: 1, events: 3, visits: 1, push_subscriptions: 1, deliveries: 1 },
    });
    expect(JSON.stringify(data)).not.toContain(SECRET);
    expect(JSON.stringify(data)).not.toContain(victimId);
    const other = await admin.adminPrivacyAudit({ path: { app_id: b.app.id } });
    expect(other.data!.items.filter((i) => i.action === 'user.erase')).toEqual([]);
  });

  it('works through the admin API, and refuses another app or an unknown one', async () => {
    const missing = await admin.adminPrivacyEraseUser({ path: { app_id: a.app.id, user_id: 'nobody' } });
    expect(missing.response.status).toBe(404);
    const foreign = await admin.adminPrivacyEraseUser({ path: { app_id: uuidv7(), user_id: 'victim' } });
    expect(foreign.response.status).toBe(404);
    const { data } = await admin.adminPrivacyEraseUser({ path: { app_id: b.app.id, user_id: 'victim' } });
    expect(data?.erased).toMatchObject({ users: 1, aliases: 1, events: 3 });
    const audit = await admin.adminPrivacyAudit({ path: { app_id: b.app.id } });
    expect(audit.data!.items[0]).toMatchObject({
      action: 'user.erase',
      // the admin token of the test server comes from ADMIN_TOKEN
      actor: 'env',
      actor_kind: 'admin',
      actor_name: 'ADMIN_TOKEN',
      user_id: 'victim',
    });
    // a REST key reaches only its own app: b's users are not a's
    expect((await a.client.usersErase({ path: { user_id: 'bystander' } })).response.status).toBe(200);
  });
});
