// Keys and the ingestion path's apps come from memory (admin/keys.ts, admin/app-cache.ts); a key
// revoked or an app changed through one instance reaches the others: through Redis pub/sub when
// REDIS_URL is set (the test waits for the message), else when their cache expires (the test moves
// the other instance's clock past it). Two instances: two test servers on one database.
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CACHE_TTL_MS } from '../../server/src/admin/cache-bus.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const START = new Date('2026-03-02T12:00:00Z');

/** Two instances on one database; the second runs on a clock the test moves. */
async function pair(env: Record<string, string>) {
  let now = START.getTime();
  const a = await startTestServer(env);
  const b = await startTestServer(env, { database: a.db, clock: () => new Date(now) });
  return { a, b, advance: (ms: number) => (now += ms) };
}

const track = (server: TestServer, key: string, body: Record<string, unknown> = {}) =>
  createTallyClient({ baseUrl: server.url, apiKey: key }).eventsTrack({
    body: { user_id: 'u', event_name: 'cached', ...body } as never,
  });

const admin = (server: TestServer) => createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });

const storedIps = async (server: TestServer, t: Tenant, eventName: string) =>
  (await server.db.knex('events').where({ app_id: t.app.id, event_name: eventName }).pluck('ip')) as (string | null)[];

describe.each([
  ['without Redis', {}],
  ['with Redis', { REDIS_URL }],
] as const)('two instances %s', (mode, env) => {
  let a: TestServer;
  let b: TestServer;
  let advance: (ms: number) => number;
  const redis = mode === 'with Redis';

  beforeAll(async () => {
    ({ a, b, advance } = await pair(env));
    await b.tally.cacheBus.subscribed();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  /** Redis: waits for the change to reach B. Without: moves B's clock past the cache's expiry. */
  async function reachB(wanted: (c: { kind: string; id?: string }) => boolean, change: () => Promise<void>) {
    const heard = redis ? b.tally.cacheBus.nextFromElsewhere(wanted) : null;
    await change();
    if (heard) await heard;
    else advance(CACHE_TTL_MS + 1);
  }

  it('a key revoked on one instance is refused on the other', async () => {
    const t = await a.createTenant();
    expect((await track(b, t.apiKey)).response.status).toBe(200); // B has the key in memory now
    await reachB(
      (c) => c.kind === 'key' && c.id === t.apiKeyId,
      async () => {
        const revoked = await admin(a).adminKeysRevoke({ path: { key_id: t.apiKeyId } });
        expect(revoked.response.status).toBe(200);
        // the instance that revoked it refuses it at once
        expect((await track(a, t.apiKey)).error).toMatchObject({ code: 'REVOKED_API_KEY' });
        if (!redis) {
          // B still uses its copy until it expires: the cache, not the database, answered
          expect((await track(b, t.apiKey)).response.status).toBe(200);
        }
      },
    );
    const refused = await track(b, t.apiKey);
    expect(refused.response.status).toBe(401);
    expect(refused.error).toMatchObject({ code: 'REVOKED_API_KEY' });
  });

  it("an app's ip_mode changed on one instance applies on the other", async () => {
    const t = await a.createTenant();
    expect((await track(b, t.apiKey, { event_name: 'before', ip: '203.0.113.77' })).response.status).toBe(200);
    expect(await storedIps(b, t, 'before')).toEqual(['203.0.113.77']);
    await reachB(
      (c) => c.kind === 'app' && c.id === t.app.id,
      async () => {
        const changed = await admin(a).adminAppsUpdate({ path: { app_id: t.app.id }, body: { ip_mode: 'none' } });
        expect(changed.response.status).toBe(200);
        expect((await track(a, t.apiKey, { event_name: 'on_a', ip: '203.0.113.77' })).response.status).toBe(200);
        expect(await storedIps(a, t, 'on_a')).toEqual([null]);
      },
    );
    expect((await track(b, t.apiKey, { event_name: 'after', ip: '203.0.113.77' })).response.status).toBe(200);
    expect(await storedIps(b, t, 'after')).toEqual([null]);
  });
});
