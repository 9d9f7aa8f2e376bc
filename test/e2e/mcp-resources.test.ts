// MCP resource GETs through @tally/client (every body validated strictly against the contract):
// the resource index, an app with its figures, versions, the events query (filters, pagination,
// bot traffic excluded), users by external id or alias, audiences list and detail, and the key
// rules (401 without or with a bad key, 403 without read, 400 when app_id is needed).
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { errorPaths } from '../helpers/errors.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;
let mcp: TallyClient;
let admin: TallyClient;

// One UTC app. ann: signup, 3 purchases; ben: signup, view; a bot visitor's purchase that nothing may show.
const EVENTS = [
  { user_id: 'ann', event_name: 'signup', timestamp: '2026-03-01T10:00:00Z', properties: { plan: 'pro' } },
  { user_id: 'ann', event_name: 'purchase', timestamp: '2026-03-02T10:00:00Z', properties: { revenue: 10 } },
  { user_id: 'ann', event_name: 'purchase', timestamp: '2026-03-03T23:30:00Z', properties: { revenue: 20 } },
  { user_id: 'ann', event_name: 'purchase', timestamp: '2026-03-04T00:30:00Z', properties: { revenue: 30 } },
  { user_id: 'ben', event_name: 'signup', timestamp: '2026-03-02T09:00:00Z' },
  { user_id: 'ben', event_name: 'view', timestamp: '2026-03-03T12:00:00Z' },
];

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  mcp = createTallyClient({ baseUrl: server.url, mcpApiKey: tenant.mcpKey });
  admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
  expect((await tenant.client.eventsTrackBatch({ body: { events: EVENTS } })).error).toBeUndefined();
  await tenant.client.usersUpsert({
    body: { user_id: 'ann', email: 'ann@shop.io', properties: { plan: 'pro' }, origin: { channel: 'ads' } },
  });
  await tenant.client.usersCreateAlias({ body: { user_id: 'ann', alias_id: 'visitor-7' } });
  const bot = uuidv7();
  await server.db.knex('users').insert({ id: bot, app_id: tenant.app.id, external_id: 'visitor-bot' });
  await server.db.knex('events').insert({
    id: uuidv7(),
    app_id: tenant.app.id,
    user_id: bot,
    event_name: 'purchase',
    properties: JSON.stringify({ revenue: 1000 }),
    source: 'website',
    is_bot: true,
    created_at: new Date('2026-03-03T13:00:00Z'),
  });
  for (const [version, released_at] of [
    ['1.0.0', '2026-01-01T00:00:00Z'],
    ['1.2.0', '2026-03-01T00:00:00Z'],
    ['1.1.0', '2026-02-01T00:00:00Z'],
  ] as const) {
    const added = await admin.adminVersionsAdd({
      path: { app_id: tenant.app.id },
      body: { version, released_at, release_notes: `notes ${version}`, created_by: 'ci' },
    });
    expect(added.error).toBeUndefined();
  }
});
afterAll(() => server?.close());

describe('keys', () => {
  it('401 without a key or with a bad one, 403 without read', async () => {
    for (const key of [undefined, 'tk_mcp_not-a-real-key', tenant.apiKey]) {
      const res = await createTallyClient({ baseUrl: server.url, mcpApiKey: key }).mcpGetApp({
        path: { appId: tenant.app.id },
      });
      expect(res.response.status).toBe(401);
      expect(res.error).toMatchObject({ success: false, code: key ? 'INVALID_API_KEY' : 'MISSING_AUTH' });
    }
    const writeOnly = await server.createTenant({ mcpPermissions: ['write'] });
    const res = await createTallyClient({ baseUrl: server.url, mcpApiKey: writeOnly.mcpKey }).mcpEvents({
      query: { app_id: writeOnly.app.id },
    });
    expect(res.response.status).toBe(403);
    expect(res.error).toMatchObject({
      code: 'INSUFFICIENT_PERMISSIONS',
      details: { required_permission: 'read', current_permissions: ['write'] },
    });
  });

  it('app_id may be left out with one app, and is needed (400) with several', async () => {
    const first = await server.createTenant();
    const client = createTallyClient({ baseUrl: server.url, mcpApiKey: first.mcpKey });
    expect((await client.mcpEvents()).data?.pagination.total).toBe(0);
    await server.createTenant({ organizationId: first.organization.id });
    for (const call of [
      () => client.mcpEvents(),
      () => client.mcpListAudiences(),
      () => client.mcpGetUser({ path: { userId: 'ann' } }),
    ]) {
      const res = await call();
      expect(res.response.status).toBe(400);
      expect(res.error).toMatchObject({ code: 'INVALID_REQUEST' });
      expect(errorPaths(res.error)).toEqual(['/query/app_id']);
    }
    const named = await client.mcpEvents({ query: { app_id: first.app.id } });
    expect(named.data?.pagination.total).toBe(0);
  });
});

describe('apps', () => {
  it('the index lists the organization apps and audiences with their paths', async () => {
    const created = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'Buyers', criteria: 'users who did purchase' },
    });
    expect(created.error).toBeUndefined();
    const { data, error } = await mcp.mcpResources();
    expect(error).toBeUndefined();
    expect(data).toEqual({
      resources: {
        apps: [
          {
            id: tenant.app.id,
            name: tenant.app.name,
            description: tenant.app.description,
            type: 'app',
            uri: `/mcp/resources/apps/${tenant.app.id}`,
          },
        ],
        audiences: [
          {
            id: created.data!.audience_id,
            name: 'Buyers',
            description: null,
            type: 'audience',
            app_id: tenant.app.id,
            uri: `/mcp/resources/audiences/${created.data!.audience_id}`,
          },
        ],
      },
    });
  });

  it('an app with its totals and top events, bot traffic excluded', async () => {
    const { data, error } = await mcp.mcpGetApp({ path: { appId: tenant.app.id } });
    expect(error).toBeUndefined();
    expect(data).toEqual({
      id: tenant.app.id,
      name: tenant.app.name,
      description: tenant.app.description,
      created_at: tenant.app.created_at.toISOString(),
      updated_at: expect.any(String),
      stats: { users: 3, events: 6, last_activity: '2026-03-04T00:30:00.000Z' },
      top_events: [
        { name: 'purchase', count: 3 },
        { name: 'signup', count: 2 },
        { name: 'view', count: 1 },
      ],
    });
    // The same figures through the SQL sandbox.
    const sql = await tenant.client.analyticsQuery({
      body: {
        app_id: tenant.app.id,
        query: `select (select count(*) from users) as users, count(*) as events, max(created_at) as last from events`,
      },
    });
    expect(sql.data?.data[0]).toMatchObject({ users: 3, events: 6 });
  });

  it('versions, latest release first, with the current version', async () => {
    const { data, error } = await mcp.mcpAppVersions({ path: { appId: tenant.app.id } });
    expect(error).toBeUndefined();
    expect(data).toMatchObject({
      app_id: tenant.app.id,
      app_name: tenant.app.name,
      current_version: '1.2.0',
      total: 3,
    });
    expect(data!.versions.map((v) => v.version)).toEqual(['1.2.0', '1.1.0', '1.0.0']);
    expect(data!.versions[0]).toEqual({
      id: expect.any(String),
      version: '1.2.0',
      release_notes: 'notes 1.2.0',
      released_at: '2026-03-01T00:00:00.000Z',
      created_by: 'ci',
    });
    const empty = await server.createTenant();
    const none = await createTallyClient({ baseUrl: server.url, mcpApiKey: empty.mcpKey }).mcpAppVersions({
      path: { appId: empty.app.id },
    });
    expect(none.data).toEqual({
      app_id: empty.app.id,
      app_name: empty.app.name,
      current_version: null,
      versions: [],
      total: 0,
    });
  });
});

describe('events', () => {
  const query = (q: Record<string, unknown>) =>
    mcp.mcpEvents({ query: { app_id: tenant.app.id, ...q } as never }).then((r) => {
      expect(r.error, JSON.stringify(r.error)).toBeUndefined();
      return r.data!;
    });

  it('newest first, with the external user id, bot traffic excluded', async () => {
    const page = await query({});
    expect(page.pagination).toEqual({ total: 6, limit: 100, offset: 0, has_more: false });
    expect(page.events.map((e) => e.created_at)).toEqual(
      [...EVENTS]
        .map((e) => new Date(e.timestamp).toISOString())
        .sort()
        .reverse(),
    );
    expect(page.events[0]).toEqual({
      id: expect.any(String),
      app_id: tenant.app.id,
      user_id: 'ann',
      event_name: 'purchase',
      properties: { revenue: 30 },
      created_at: '2026-03-04T00:30:00.000Z',
    });
  });

  it('filters by name, user (external id or alias) and inclusive days', async () => {
    expect((await query({ event_name: 'purchase' })).pagination.total).toBe(3);
    expect((await query({ user_id: 'visitor-7' })).events.every((e) => e.user_id === 'ann')).toBe(true);
    expect((await query({ user_id: 'visitor-7' })).pagination.total).toBe(4);
    const days = await query({ start_date: '2026-03-02', end_date: '2026-03-03' });
    expect(days.events.map((e) => e.created_at)).toEqual([
      '2026-03-03T23:30:00.000Z',
      '2026-03-03T12:00:00.000Z',
      '2026-03-02T10:00:00.000Z',
      '2026-03-02T09:00:00.000Z',
    ]);
    const both = await query({ event_name: 'purchase', user_id: 'ann', start_date: '2026-03-04' });
    expect(both.events.map((e) => e.properties)).toEqual([{ revenue: 30 }]);
    expect((await query({ event_name: 'nothing' })).pagination).toEqual({
      total: 0,
      limit: 100,
      offset: 0,
      has_more: false,
    });
  });

  it('pages with limit and offset; has_more says whether more follow', async () => {
    const all = (await query({})).events.map((e) => e.id);
    const first = await query({ limit: 4 });
    expect(first.pagination).toEqual({ total: 6, limit: 4, offset: 0, has_more: true });
    const second = await query({ limit: 4, offset: 4 });
    expect(second.pagination).toEqual({ total: 6, limit: 4, offset: 4, has_more: false });
    expect([...first.events, ...second.events].map((e) => e.id)).toEqual(all);
    expect((await query({ offset: 50 })).events).toEqual([]);
    expect((await query({ limit: 1000 })).pagination.limit).toBe(1000);
  });

  it('refuses bad pages, dates in the wrong order and unknown users', async () => {
    for (const [q, path] of [
      [{ limit: 0 }, '/query/limit'],
      [{ limit: 1001 }, '/query/limit'],
      [{ offset: -1 }, '/query/offset'],
      [{ start_date: '2026-02-30' }, '/query/start_date'],
      [{ start_date: '2026-03-05', end_date: '2026-03-01' }, '/query/end_date'],
    ] as const) {
      const res = await mcp.mcpEvents({ query: { app_id: tenant.app.id, ...q } as never });
      expect(res.response.status, JSON.stringify(q)).toBe(400);
      expect(errorPaths(res.error)).toContain(path);
    }
    const unknown = await mcp.mcpEvents({ query: { app_id: tenant.app.id, user_id: 'nobody' } });
    expect(unknown.response.status).toBe(404);
    expect(unknown.error).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('users', () => {
  it('by external id or alias, with the stored profile', async () => {
    const byId = await mcp.mcpGetUser({ path: { userId: 'ann' } });
    expect(byId.error).toBeUndefined();
    expect(byId.data).toEqual({
      id: expect.any(String),
      external_id: 'ann',
      email: 'ann@shop.io',
      phone: null,
      properties: { plan: 'pro' },
      origin: { channel: 'ads' },
      created_at: expect.any(String),
      last_active: '2026-03-04T00:30:00.000Z',
      event_count: 4,
    });
    const byAlias = await mcp.mcpGetUser({ path: { userId: 'visitor-7' }, query: { app_id: tenant.app.id } });
    expect(byAlias.data).toEqual(byId.data);
    const missing = await mcp.mcpGetUser({ path: { userId: 'nobody' } });
    expect(missing.response.status).toBe(404);
    expect(missing.error).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('audiences', () => {
  it('list with current counts, and detail with criteria, first members and users_total', async () => {
    const created = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'Signed up', description: 'Everyone', criteria: 'users who did signup' },
    });
    expect(created.error).toBeUndefined();
    const id = created.data!.audience_id;
    const list = await mcp.mcpListAudiences({ query: { app_id: tenant.app.id } });
    expect(list.error).toBeUndefined();
    expect(list.data!.audiences[0]).toEqual({
      id,
      name: 'Signed up',
      description: 'Everyone',
      type: 'audience',
      app_id: tenant.app.id,
      user_count: 2,
      uri: `/mcp/resources/audiences/${id}`,
    });
    const detail = await mcp.mcpGetAudience({ path: { audienceId: id } });
    expect(detail.error).toBeUndefined();
    expect(detail.data).toEqual({
      id,
      name: 'Signed up',
      description: 'Everyone',
      criteria: 'users who did signup',
      app_id: tenant.app.id,
      user_count: 2,
      created_at: created.data!.created_at,
      updated_at: expect.any(String),
      users: [
        { user_id: 'ann', email: 'ann@shop.io', last_active: '2026-03-04T00:30:00.000Z' },
        { user_id: 'ben', email: null, last_active: '2026-03-03T12:00:00.000Z' },
      ],
      users_total: 2,
    });
    for (const bad of ['not-a-uuid', uuidv7()]) {
      const res = await mcp.mcpGetAudience({ path: { audienceId: bad } });
      expect(res.response.status).toBe(404);
      expect(res.error).toMatchObject({ code: 'NOT_FOUND' });
    }
  });

  it('the detail lists the first 100 members and counts them all', async () => {
    const big = await server.createTenant();
    const events = Array.from({ length: 130 }, (_, i) => ({
      user_id: `u${String(i).padStart(3, '0')}`,
      event_name: 'open',
      timestamp: new Date(Date.UTC(2026, 2, 1, 0, i)).toISOString(),
    }));
    await big.client.eventsTrackBatch({ body: { events: events.slice(0, 100) } });
    await big.client.eventsTrackBatch({ body: { events: events.slice(100) } });
    const created = await big.client.audiencesCreate({
      body: { app_id: big.app.id, name: 'Openers', criteria: 'users who did open' },
    });
    const client = createTallyClient({ baseUrl: server.url, mcpApiKey: big.mcpKey });
    const { data, error } = await client.mcpGetAudience({ path: { audienceId: created.data!.audience_id } });
    expect(error).toBeUndefined();
    expect(data!.users).toHaveLength(100);
    expect(data!.users_total).toBe(130);
    expect(data!.user_count).toBe(130);
    expect(new Set(data!.users.map((u) => u.user_id)).size).toBe(100);
  });
});
