// The sandbox's resource layer, by the order in which answers arrive (never by milliseconds):
// per-key concurrency (2 running, 8 waiting, then 429 with reason "concurrency"), and that slow
// sandbox queries do not stall the rest of the service. Slow queries come from the test-only
// switch that turns the checker off, and end at the statement timeout or time cap.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { disableSandboxCheckerForTests } from '../../server/src/sandbox/sandbox.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;
let other: Tenant;
const embedded = !process.env.TEST_DATABASE_URL;
/** Runs until the statement timeout (PostgreSQL) or the time cap (embedded) stops it; the planner
 * estimates an endless recursive CTE as cheap, so the embedded cost check lets it through. */
const SLOW = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r';

beforeAll(async () => {
  server = await startTestServer({ ANALYTICS_QUERY_TIMEOUT_MS: '3000', EMBEDDED_QUERY_TIMEOUT_MS: '3000' });
  tenant = await server.createTenant();
  other = await server.createTenant();
  disableSandboxCheckerForTests(true);
});
afterAll(async () => {
  disableSandboxCheckerForTests(false);
  await server?.close();
});

/** Records the order in which things finish. */
function recorder() {
  const order: string[] = [];
  const track = <T>(name: string, p: Promise<T>) =>
    p.then((v) => {
      order.push(name);
      return v;
    });
  return { order, track };
}

const sandbox = (t: Tenant, sql: string) =>
  fetch(`${server.url}/v1/analytics/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: t.app.id, query: sql }),
  }).then(async (r) => ({
    status: r.status,
    retryAfter: r.headers.get('retry-after'),
    body: (await r.json()) as Record<string, unknown>,
  }));

describe.runIf(!embedded)('PostgreSQL', () => {
  it('runs 2 slow queries of one key, queues 8, refuses 2; others are answered meanwhile', async () => {
    const { order, track } = recorder();
    const slow = Array.from({ length: 12 }, (_, i) => track(`slow-${i}`, sandbox(tenant, SLOW)));
    // give the twelve time to reach the server before the others are sent
    await new Promise((r) => setTimeout(r, 300));
    const health = track('healthz', fetch(`${server.url}/healthz`));
    const event = track(
      'other-tenant-event',
      other.client.eventsTrack({ body: { user_id: 'x', event_name: 'meanwhile' } }),
    );
    const results = await Promise.all(slow);
    expect((await health).status).toBe(200);
    expect((await event).response.status).toBe(200);

    const refused = results.filter((r) => r.status === 429);
    const timedOut = results.filter((r) => r.status === 400);
    expect(refused).toHaveLength(2);
    expect(timedOut).toHaveLength(10);
    for (const r of timedOut) expect(r.body.code).toBe('QUERY_TIMEOUT');
    for (const r of refused) {
      expect(r.body).toMatchObject({
        code: 'RATE_LIMIT_EXCEEDED',
        details: { reason: 'concurrency', running: 2, waiting: 8, retry_after: expect.any(Number) },
      });
      // every 429 says when to retry: when the first running query reaches its time limit
      const retryAfter = (r.body.details as { retry_after: number }).retry_after;
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(r.retryAfter).toBe(String(retryAfter));
    }
    const firstSlowDone = order.findIndex(
      (n) => results[Number(n.split('-')[1])]?.status === 400 && n.startsWith('slow'),
    );
    expect(order.indexOf('healthz')).toBeLessThan(firstSlowDone);
    expect(order.indexOf('other-tenant-event')).toBeLessThan(firstSlowDone);
    // the refusals came back before any query finished
    for (const [i, r] of results.entries()) {
      if (r.status === 429) expect(order.indexOf(`slow-${i}`)).toBeLessThan(firstSlowDone);
    }
  }, 60_000);
});

describe.runIf(!embedded)('metric queries (PostgreSQL)', () => {
  it('stops a metric query at the analytics statement timeout', async () => {
    const quick = await startTestServer({ ANALYTICS_QUERY_TIMEOUT_MS: '100' });
    const target = inject('database');
    const locker = new pg.Client({ connectionString: target.kind === 'postgres' ? target.url : undefined });
    await locker.connect();
    try {
      const t = await quick.createTenant();
      await t.client.eventsTrackBatch({
        body: { events: Array.from({ length: 100 }, (_, i) => ({ user_id: `m-${i}`, event_name: 'x' })) },
      });
      // While another transaction holds an exclusive lock on what metrics read (the events, and the
      // activity rollup that answers them), the metric query waits, and a lock wait counts toward
      // the statement timeout: it is stopped whatever the machine's speed.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE events, user_days, activity_deltas IN ACCESS EXCLUSIVE MODE');
      const { error, response } = await t.client.analyticsMetrics({
        query: {
          app_id: t.app.id,
          metric: 'mau',
          granularity: 'day',
          start_date: '2001-01-01',
          end_date: '2025-01-01',
        },
      });
      await locker.query('ROLLBACK');
      expect(response.status).toBe(400);
      expect(error).toMatchObject({ code: 'QUERY_TIMEOUT' });
    } finally {
      await locker.end();
      await quick.close();
    }
  });
});

describe.runIf(embedded)('embedded', () => {
  it('answers /healthz during a sandbox query, and queues other work behind the running query only', async () => {
    const { order, track } = recorder();
    const first = track('first', sandbox(tenant, SLOW));
    await new Promise((r) => setTimeout(r, 300));
    // a second sandbox query (another key) waits in the sandbox queue, behind the first
    const second = track('second', sandbox(other, SLOW));
    await new Promise((r) => setTimeout(r, 100));
    const health = track('healthz', fetch(`${server.url}/healthz`));
    const event = track(
      'event',
      other.client.eventsTrack({ body: { user_id: 'meanwhile', event_name: 'during_sandbox_query' } }),
    );
    const [a, b] = await Promise.all([first, second]);
    expect((await health).status).toBe(200);
    const ack = await event;
    expect(ack.response.status).toBe(200);
    expect([a.body.code, b.body.code]).toEqual(['QUERY_TIMEOUT', 'QUERY_TIMEOUT']);
    // /healthz does not wait for the database; the event waits for the running query only
    expect(order.indexOf('healthz')).toBeLessThan(order.indexOf('first'));
    expect(
      order.indexOf('event'),
      JSON.stringify({ order, a: a.body, b: b.body, ack: ack.response.status }),
    ).toBeLessThan(order.indexOf('second'));
    const stored = await server.db
      .knex('events')
      .where({ app_id: other.app.id, event_name: 'during_sandbox_query' })
      .count({ n: '*' });
    expect(Number(stored[0]!.n)).toBe(1);
    // both organizations ran into the time cap, so both are cooled down now (sandbox-cooldown.test.ts)
    expect((await sandbox(other, 'SELECT 1 AS one')).body).toMatchObject({ details: { reason: 'cooldown' } });
  }, 60_000);
});
