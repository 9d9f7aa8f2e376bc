// The embedded database's cool-down (issue 25): a query that runs into the time cap restarts the
// shared database for every tenant, so its organization's next SQL queries are refused for a
// while (429 with Retry-After and reason "cooldown"), on all of its keys and apps, while other
// organizations are not affected; the cool-down runs on the service clock (moved here, never
// waited for) and doubles at the next hit. No organization can keep the database restarting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disableSandboxCheckerForTests } from '../../server/src/sandbox/sandbox.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

/** Runs past any time cap; the planner estimates an endless recursive CTE as cheap. */
const CAPPED = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r';

describe.runIf(!process.env.TEST_DATABASE_URL)('cool-down after the embedded time cap', () => {
  let server: TestServer;
  let a: Tenant;
  let aOtherApp: Tenant;
  let b: Tenant;
  let now = Date.parse('2026-06-01T12:00:00Z');

  beforeAll(async () => {
    server = await startTestServer({ EMBEDDED_QUERY_TIMEOUT_MS: '1000' }, { clock: () => new Date(now) });
    a = await server.createTenant();
    aOtherApp = await server.createTenant({ organizationId: a.organization.id });
    b = await server.createTenant();
    disableSandboxCheckerForTests(true);
  });
  afterAll(async () => {
    disableSandboxCheckerForTests(false);
    await server?.close();
  });

  const sql = (t: Tenant, query: string) =>
    fetch(`${server.url}/v1/analytics/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ app_id: t.app.id, query }),
    }).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.json() }));

  const cooled = (retryAfter: number) => ({
    status: 429,
    retryAfter: String(retryAfter),
    code: 'RATE_LIMIT_EXCEEDED',
    reason: 'cooldown',
    retry_after: retryAfter,
  });
  const seen = (r: Awaited<ReturnType<typeof sql>>) => ({
    status: r.status,
    retryAfter: r.retryAfter,
    code: r.body.code,
    reason: r.body.details?.reason,
    retry_after: r.body.details?.retry_after,
  });

  it('refuses A for a minute after its query hit the cap, on every key and app, and answers B', async () => {
    const generation = server.db.embedded!.generation;
    expect((await sql(a, CAPPED)).body.code).toBe('QUERY_TIMEOUT');
    expect(server.db.embedded!.generation).toBe(generation + 1);

    expect(seen(await sql(a, 'SELECT 1 AS one'))).toEqual(cooled(60));
    expect(seen(await sql(aOtherApp, 'SELECT 1 AS one'))).toEqual(cooled(60));
    const other = await sql(b, 'SELECT 1 AS one');
    expect({ status: other.status, data: other.body.data }).toEqual({ status: 200, data: [{ one: 1 }] });
    // A cannot restart the database again meanwhile
    for (let i = 0; i < 3; i++) expect(seen(await sql(a, CAPPED))).toEqual(cooled(60));
    expect(server.db.embedded!.generation).toBe(generation + 1);

    now += 45_000;
    expect(seen(await sql(a, 'SELECT 1 AS one'))).toEqual(cooled(15));
    now += 15_000;
    expect((await sql(a, 'SELECT 1 AS one')).body.data).toEqual([{ one: 1 }]);
  }, 120_000);

  it('doubles the cool-down when A hits the cap again within the hour', async () => {
    expect((await sql(a, CAPPED)).body.code).toBe('QUERY_TIMEOUT');
    expect(seen(await sql(a, 'SELECT 1 AS one'))).toEqual(cooled(120));
    now += 120_000;
    expect((await sql(aOtherApp, 'SELECT 1 AS one')).body.data).toEqual([{ one: 1 }]);
  }, 120_000);
});
