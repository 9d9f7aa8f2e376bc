// The session policy, through the SDK's client over HTTP on a moved clock: a key holds 50
// sessions; at the cap the least recently used one idle for a minute is evicted (a request on it
// is 404, and a new initialize works); when all 50 were used within the minute, initialize is 429
// with Retry-After and details.reason "sessions", and no rate-limit header says otherwise. 60
// concurrent initialize calls, spread over two instances (and a second process on PostgreSQL),
// leave at most 50 open. logging/setLevel is stored with the session and read back with it.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { isLogged } from '../../server/src/mcp/logging.js';
import { sessionsOfKey } from '../../server/src/mcp/queries/sessions.js';
import { resumeSession } from '../../server/src/mcp/sessions.js';
import { connectMcp, initializeRequest, mcpPost } from '../helpers/mcp-client.js';
import { startServerProcess } from '../helpers/process-server.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

let now = new Date('2026-06-01T12:00:00Z');
const clock = () => now;
const later = (seconds: number) => {
  now = new Date(now.getTime() + seconds * 1000);
};

let server: TestServer;
let second: TestServer;

/** The sessions stored for the tenant's MCP key, least recently used first. */
async function storedSessions(t: Tenant) {
  const key = await server.db.knex('api_keys').where({ app_id: t.app.id, kind: 'mcp' }).first('id');
  return sessionsOfKey(server.db.knex, key.id, new Date(0));
}

beforeAll(async () => {
  // the per-minute limits on, so their headers are there to contradict a session refusal
  const env = { RATE_LIMITS: JSON.stringify({ mcp: 10_000 }) };
  server = await startTestServer(env, { clock });
  second = await startTestServer(env, { clock, database: server.db });
}, 60_000);
afterAll(async () => {
  await second?.close();
  await server?.close();
});

describe('a key that never closes its sessions', () => {
  it('holds 50, then evicts the least recently used idle one: a call on it is 404 and a new initialize works', async () => {
    const t = await server.createTenant();
    const clients: { client: Client; sessionId: string }[] = [];
    for (let i = 0; i < 50; i++) {
      clients.push(await connectMcp(server.url, t.mcpKey));
      later(1); // session i was last used i seconds after the first
    }
    // at t0+50s every session was used within the last minute: refused, with when to retry
    await expect(connectMcp(server.url, t.mcpKey)).rejects.toMatchObject({ code: 429 });
    const refused = await mcpPost(server.url, t.mcpKey, initializeRequest(51));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('10'); // the first one turns 60 s idle at t0+60s
    expect(refused.headers.get('x-ratelimit-remaining')).toBeNull();
    const body = (await refused.json()) as { error: { code: number; message: string; data: Record<string, unknown> } };
    expect(body.error.data).toEqual({
      code: 'RATE_LIMIT_EXCEEDED',
      reason: 'sessions',
      limit: 50,
      open: 50,
      retry_after: 10,
    });
    expect(body.error.message).toMatch(/50/);
    expect(await storedSessions(t)).toHaveLength(50);

    later(11); // t0+61s: sessions 0 and 1 have been idle for a minute or more
    const fresh: Client[] = [];
    fresh.push((await connectMcp(server.url, t.mcpKey)).client);
    later(60); // the rest of the first 50 are idle now too
    for (let i = 0; i < 9; i++) fresh.push((await connectMcp(second.url, t.mcpKey)).client); // 60 initialize calls in all

    const [first] = clients;
    await expect(first!.client.listTools()).rejects.toMatchObject({ code: 404 });
    const stored = (await storedSessions(t)).map((s) => s.id);
    expect(stored).toHaveLength(50);
    for (const [i, c] of clients.entries()) expect(stored.includes(c.sessionId), `session ${i}`).toBe(i >= 10);
    // a survivor still works, and the client that lost its session starts a new one
    expect((await clients[10]!.client.listTools()).tools.length).toBeGreaterThan(5);
    const again = await connectMcp(server.url, t.mcpKey);
    expect((await again.client.listTools()).tools.length).toBeGreaterThan(5);
    for (const c of [...clients.map((x) => x.client), ...fresh, again.client]) await c.close();
  }, 120_000);

  it('answers a session refusal with Retry-After even when rate limits are off', async () => {
    const off = await startTestServer({}, { clock, database: server.db });
    try {
      const t = await server.createTenant();
      for (let i = 0; i < 50; i++) expect((await mcpPost(off.url, t.mcpKey, initializeRequest(i))).status).toBe(200);
      const refused = await mcpPost(off.url, t.mcpKey, initializeRequest(50));
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('60');
    } finally {
      await off.close();
    }
  }, 60_000);
});

describe('60 concurrent initialize calls of one key', () => {
  it('leave at most 50 sessions open, across instances', async () => {
    now = new Date(); // the other process runs on the real clock
    const t = await server.createTenant();
    const urls = [server.url, second.url];
    const target = inject('database');
    const processed =
      target.kind === 'postgres'
        ? await startServerProcess({ DATABASE_URL: target.url, ADMIN_TOKEN: TEST_ADMIN_TOKEN })
        : null;
    if (processed) urls.push(processed.url);
    try {
      const results = await Promise.allSettled(
        Array.from({ length: 60 }, (_, i) => connectMcp(urls[i % urls.length]!, t.mcpKey)),
      );
      const opened = results.filter((r) => r.status === 'fulfilled');
      const refused = results.filter((r) => r.status === 'rejected');
      expect(opened).toHaveLength(50);
      for (const r of refused) expect((r as PromiseRejectedResult).reason).toMatchObject({ code: 429 });
      expect(await storedSessions(t)).toHaveLength(50);
      for (const r of opened) await (r as PromiseFulfilledResult<{ client: Client }>).value.client.close();
    } finally {
      await processed?.stop();
    }
  }, 120_000);
});

describe('logging/setLevel', () => {
  it('stores the level with the session: a new request, on any instance, reads it back', async () => {
    const t = await server.createTenant();
    const { client, sessionId } = await connectMcp(server.url, t.mcpKey);
    expect(client.getServerCapabilities()).toMatchObject({ logging: {} });
    await client.setLoggingLevel('warning');
    const onSecond = await mcpPost(
      second.url,
      t.mcpKey,
      { jsonrpc: '2.0', id: 7, method: 'tools/list' },
      { 'Mcp-Session-Id': sessionId },
    );
    expect(onSecond.status).toBe(200);
    const [stored] = await storedSessions(t);
    expect(stored).toMatchObject({ id: sessionId, log_level: 'warning' });
    // what the next request reads with its session (resumeSession is how every request after
    // initialize finds it), and what the level lets through
    const principal = {
      kind: 'mcp' as const,
      keyId: stored!.key_id,
      organizationId: t.organization.id,
      permissions: [],
      keyName: '',
    };
    const resumed = await resumeSession({ db: server.db.knex, clock }, principal, sessionId);
    expect(resumed).toMatchObject({ id: sessionId, logLevel: 'warning' });
    expect(isLogged(resumed!.logLevel, 'info')).toBe(false);
    expect(isLogged(resumed!.logLevel, 'error')).toBe(true);
    // until a client sets a level it gets info and above, not the debug messages (the SQL)
    expect(isLogged(null, 'debug')).toBe(false);
    expect(isLogged(null, 'info')).toBe(true);
    // set on the second instance, read by the first
    const set = await mcpPost(
      second.url,
      t.mcpKey,
      { jsonrpc: '2.0', id: 8, method: 'logging/setLevel', params: { level: 'error' } },
      { 'Mcp-Session-Id': sessionId },
    );
    expect(((await set.json()) as { result: unknown }).result).toEqual({});
    expect((await storedSessions(t))[0]).toMatchObject({ log_level: 'error' });
    const bad = await mcpPost(
      server.url,
      t.mcpKey,
      { jsonrpc: '2.0', id: 9, method: 'logging/setLevel', params: { level: 'loud' } },
      { 'Mcp-Session-Id': sessionId },
    );
    expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32602);
    expect((await storedSessions(t))[0]).toMatchObject({ log_level: 'error' });
    await client.close();
  });
});
