// REST and MCP rate limits per key: headers on every limited response, 429 with Retry-After and
// details once a class's per-minute limit is used up, and classes counted apart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer({ RATE_LIMITS: JSON.stringify({ events: 3, batch: 1, other: 2, mcp: 1 }) });
  tenant = await server.createTenant();
});
afterAll(() => server?.close());

describe('rate limits', () => {
  it('limits POST /v1/events per key and says when to retry', async () => {
    const body = { event_name: 'rl', user_id: 'rl-1' };
    const statuses: number[] = [];
    let last: Response | undefined;
    let lastError: unknown;
    for (let i = 0; i < 4; i++) {
      const { response, error } = await tenant.client.eventsTrack({ body });
      statuses.push(response.status);
      last = response;
      lastError = error;
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    expect(last!.headers.get('x-ratelimit-limit')).toBe('3');
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(last!.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    expect(lastError).toMatchObject({
      success: false,
      error: 'Too Many Requests',
      code: 'RATE_LIMIT_EXCEEDED',
      details: { limit: 3, window: 60, retry_after: expect.any(Number) },
    });
    // Nothing of the refused request was stored.
    const stored = await server.db.knex('events').where({ app_id: tenant.app.id, event_name: 'rl' });
    expect(stored).toHaveLength(3);
  });

  it('counts each class and each key apart', async () => {
    const batch = await tenant.client.eventsTrackBatch({ body: { events: [{ event_name: 'b', user_id: 'x' }] } });
    expect(batch.response.status).toBe(200);
    expect(batch.response.headers.get('x-ratelimit-limit')).toBe('1');
    const other = await server.createTenant();
    const fresh = await other.client.eventsTrack({ body: { event_name: 'rl', user_id: 'rl-2' } });
    expect(fresh.response.status).toBe(200);
    expect(fresh.response.headers.get('x-ratelimit-remaining')).toBe('2');
  });

  it('limits MCP requests per MCP key', async () => {
    const headers = { 'x-mcp-api-key': tenant.mcpKey };
    expect((await fetch(`${server.url}/mcp/auth`, { headers })).status).toBe(200);
    const refused = await fetch(`${server.url}/mcp/auth`, { headers });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
  });

  it('limits GET /v1/users/{user_id} in the "other" class, replays of Idempotency-Key requests included', async () => {
    const fresh = await server.createTenant();
    const headers = {
      authorization: `Bearer ${fresh.apiKey}`,
      'content-type': 'application/json',
      'idempotency-key': 'rl-key',
    };
    const upsert = () =>
      fetch(`${server.url}/v1/users`, { method: 'POST', headers, body: JSON.stringify({ user_id: 'rl-user' }) });
    expect((await upsert()).status).toBe(200);
    const got = await fresh.client.usersGet({ path: { user_id: 'rl-user' } });
    expect(got.response.status).toBe(200);
    expect(got.response.headers.get('x-ratelimit-limit')).toBe('2');
    const refused = await fresh.client.usersGet({ path: { user_id: 'rl-user' } });
    expect(refused.response.status).toBe(429);
    expect(refused.response.headers.get('retry-after')).toMatch(/^\d+$/);
    const replay = await upsert();
    expect(replay.status).toBe(429);
    expect(replay.headers.get('idempotent-replayed')).toBeNull();
  });

  it('leaves the admin API unlimited', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${server.url}/admin/v1/organizations`, {
        headers: { authorization: `Bearer ${server.config.adminToken}` },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBeNull();
    }
  });
});

describe('rate limits shared through Redis (REDIS_URL)', () => {
  it('counts requests of two instances together', async () => {
    const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
    const limits = JSON.stringify({ events: 3 });
    const a = await startTestServer({ RATE_LIMITS: limits, REDIS_URL: redisUrl });
    const b = await startTestServer({ RATE_LIMITS: limits, REDIS_URL: redisUrl }, { database: a.db });
    try {
      const t = await a.createTenant();
      const viaB = b.clientFor(t.apiKey);
      const body = { event_name: 'shared', user_id: 'r-1' };
      const statuses = [
        (await t.client.eventsTrack({ body })).response.status,
        (await viaB.eventsTrack({ body })).response.status,
        (await t.client.eventsTrack({ body })).response.status,
        (await viaB.eventsTrack({ body })).response.status,
      ];
      expect(statuses).toEqual([200, 200, 200, 429]);
    } finally {
      await b.close();
      await a.close();
    }
  });

  it('when Redis is down: counts the failure and lets requests through (default, open)', async () => {
    const down = await startTestServer(
      { RATE_LIMITS: JSON.stringify({ events: 3 }), REDIS_URL: 'redis://127.0.0.1:1' },
      { database: server.db },
    );
    try {
      const t = await down.createTenant();
      expect(down.tally.rateLimiter.failures).toBe(0);
      const { response } = await t.client.eventsTrack({ body: { event_name: 'e', user_id: 'r-2' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBeNull();
      expect(down.tally.rateLimiter.failures).toBeGreaterThan(0);
    } finally {
      await down.close();
    }
  });

  it('with RATE_LIMITS_FAIL=closed, answers 503 SERVICE_UNAVAILABLE while Redis is down', async () => {
    const down = await startTestServer(
      {
        RATE_LIMITS: JSON.stringify({ events: 3 }),
        REDIS_URL: 'redis://127.0.0.1:1',
        RATE_LIMITS_FAIL: 'closed',
      },
      { database: server.db },
    );
    try {
      const t = await down.createTenant();
      const { response, error } = await t.client.eventsTrack({ body: { event_name: 'e', user_id: 'r-3' } });
      expect(response.status).toBe(503);
      expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', error: 'Service Unavailable' });
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(down.tally.rateLimiter.failures).toBeGreaterThan(0);
      expect(await down.db.knex('events').where({ app_id: t.app.id })).toEqual([]);
    } finally {
      await down.close();
    }
  });
});

describe('failed authentication', () => {
  const bad = (on: TestServer, path = '/v1/events') =>
    fetch(`${on.url}${path}`, {
      method: 'POST',
      headers: { authorization: 'Bearer tk_live_guess', 'content-type': 'application/json' },
      body: JSON.stringify({ event_name: 'e', user_id: 'u' }),
    });

  it('is limited to 20 a minute per IP by default, then every credential from that IP gets 429', async () => {
    const limited = await startTestServer({ RATE_LIMITS: 'spec' }, { database: server.db });
    try {
      const t = await limited.createTenant();
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await bad(limited)).status);
      expect(statuses).toEqual(Array(20).fill(401));
      const refused = await bad(limited);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({
        code: 'RATE_LIMIT_EXCEEDED',
        message: expect.stringContaining('failed authentications'),
        details: { limit: 20, window: 60, retry_after: expect.any(Number) },
      });
      // A valid key from the same address waits too: guessing must not go on under cover of one.
      const valid = await t.client.eventsTrack({ body: { event_name: 'e', user_id: 'u' } });
      expect(valid.response.status).toBe(429);
      // So do the admin API and MCP.
      const adminCall = await fetch(`${limited.url}/admin/v1/organizations`, {
        headers: { authorization: `Bearer ${limited.config.adminToken}` },
      });
      expect(adminCall.status).toBe(429);
      const mcp = await fetch(`${limited.url}/mcp/auth`, { headers: { 'x-mcp-api-key': t.mcpKey } });
      expect(mcp.status).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it('counts wrong admin tokens and MCP keys on the same per-IP counter; missing credentials are not failures', async () => {
    const limited = await startTestServer(
      { RATE_LIMITS: JSON.stringify({ auth_failures: 3 }) },
      { database: server.db },
    );
    try {
      const none = await fetch(`${limited.url}/v1/events`, { method: 'POST' });
      expect(none.status).toBe(401);
      const wrongAdmin = await fetch(`${limited.url}/admin/v1/organizations`, {
        headers: { authorization: 'Bearer tk_admin_wrong' },
      });
      expect(wrongAdmin.status).toBe(401);
      const wrongMcp = await fetch(`${limited.url}/mcp/auth`, { headers: { 'x-mcp-api-key': 'tk_mcp_wrong' } });
      expect(wrongMcp.status).toBe(401);
      expect((await bad(limited)).status).toBe(401);
      expect((await bad(limited)).status).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it('is not limited with RATE_LIMITS=off', async () => {
    const open = await startTestServer({ RATE_LIMITS: 'off' }, { database: server.db });
    try {
      const statuses = new Set<number>();
      for (let i = 0; i < 25; i++) statuses.add((await bad(open)).status);
      expect([...statuses]).toEqual([401]);
    } finally {
      await open.close();
    }
  });
});

describe('CORS preflights of the website endpoints', () => {
  it('are limited per IP before the database is asked anything', async () => {
    const limited = await startTestServer(
      { RATE_LIMITS: JSON.stringify({ website_events: 2 }) },
      { database: server.db },
    );
    try {
      const t = await limited.createTenant();
      await updateApp(limited.db.knex, t.app.id, { website_url: 'https://shop.example' });
      const preflight = () =>
        fetch(`${limited.url}/v1/website/visits`, {
          method: 'OPTIONS',
          headers: { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'POST' },
        });
      expect((await preflight()).status).toBe(204);
      expect((await preflight()).status).toBe(204);
      const queries: string[] = [];
      const onQuery = (q: { sql: string }) => queries.push(q.sql);
      limited.db.knex.on('query', onQuery);
      try {
        const refused = await preflight();
        expect(refused.status).toBe(429);
        expect(refused.headers.get('retry-after')).not.toBeNull();
      } finally {
        limited.db.knex.off('query', onQuery);
      }
      expect(queries).toEqual([]);
    } finally {
      await limited.close();
    }
  });
});

describe('the click link and identify (issue 23)', () => {
  const SITE = 'https://shop.example';
  const click = (on: TestServer, id = '0190f0f0-0000-7000-8000-000000000000') =>
    fetch(`${on.url}/v1/r/${id}`, { redirect: 'manual' });

  it('GET /v1/r/{deliveryId} counts in its own class, 600 a minute per IP by default', async () => {
    const spec = await startTestServer({ RATE_LIMITS: 'spec' }, { database: server.db });
    try {
      const res = await click(spec);
      expect(res.status).toBe(404);
      expect(res.headers.get('x-ratelimit-limit')).toBe('600');
      expect(res.headers.get('x-ratelimit-remaining')).toBe('599');
    } finally {
      await spec.close();
    }
  });

  it('GET /v1/r/{deliveryId} answers 429 once the clicks limit is used up, whatever the id', async () => {
    const limited = await startTestServer({ RATE_LIMITS: JSON.stringify({ clicks: 2 }) }, { database: server.db });
    try {
      const statuses = [
        (await click(limited)).status,
        (await click(limited, 'not-a-delivery')).status,
        (await click(limited)).status,
      ];
      expect(statuses).toEqual([404, 404, 429]);
      const refused = await click(limited, '0190f0f0-0000-7000-8000-000000000001');
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await refused.json()).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', details: { limit: 2, window: 60 } });
    } finally {
      await limited.close();
    }
  });

  it('POST /v1/website/identify counts with website users (website_users, per IP and app)', async () => {
    const limited = await startTestServer(
      { RATE_LIMITS: JSON.stringify({ website_users: 3 }) },
      { database: server.db },
    );
    try {
      const t = await limited.createTenant();
      await updateApp(limited.db.knex, t.app.id, { website_url: SITE });
      const web = limited.clientFor();
      const headers = { Origin: SITE };
      const identify = (n: number) =>
        web.websiteIdentify({ body: { app_id: t.app.id, visitor_id: `v-${n}`, user_id: `u-${n}` }, headers });
      const user = await web.websiteUpsertUser({
        body: { appId: t.app.id, websiteUrl: SITE, email: 'rl@example.com' },
        headers,
      });
      expect(user.response.status).toBe(200);
      const first = await identify(1);
      expect(first.response.status).toBe(200);
      expect(first.response.headers.get('x-ratelimit-limit')).toBe('3');
      expect(first.response.headers.get('x-ratelimit-remaining')).toBe('1');
      expect((await identify(2)).response.status).toBe(200);
      const refused = await identify(3);
      expect(refused.response.status).toBe(429);
      expect(refused.error).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', details: { limit: 3 } });
      expect(await limited.db.knex('users').where({ app_id: t.app.id, external_id: 'u-3' })).toEqual([]);
      // Events stay in their own class.
      const event = await web.websiteTrackEvent({
        body: { app_id: t.app.id, visitor_id: 'v-9', event_name: 'e' },
        headers,
      });
      expect(event.response.status).toBe(200);
      expect(event.response.headers.get('x-ratelimit-limit')).toBe('600');
    } finally {
      await limited.close();
    }
  });
});
