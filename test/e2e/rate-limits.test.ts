// REST and MCP rate limits per key: headers on every limited response, 429 with Retry-After and
// details once a class's per-minute limit is used up, and classes counted apart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
  it('counts requests of two instances together, and lets requests through when Redis is down', async () => {
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
    const down = await startTestServer({ RATE_LIMITS: limits, REDIS_URL: 'redis://127.0.0.1:1' });
    try {
      const t = await down.createTenant();
      const { response } = await t.client.eventsTrack({ body: { event_name: 'e', user_id: 'r-2' } });
      expect(response.status).toBe(200);
    } finally {
      await down.close();
    }
  });
});
