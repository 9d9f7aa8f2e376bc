// The SQL sandbox through POST /v1/analytics/query: what it refuses (400 QUERY_REJECTED), that it
// only ever sees the caller's app, jsonb operators, the row cap, and (PostgreSQL) the timeout.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { REFRESH_SANDBOX_STATISTICS } from '../../server/src/jobs/index.js';
import { runOverRelations, runSandboxedQuery } from '../../server/src/sandbox/sandbox.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;
let other: Tenant;

const query = (t: Tenant, sql: string, format?: 'csv') =>
  t.client.analyticsQuery({ body: { app_id: t.app.id, query: sql, ...(format ? { format } : {}) } });

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  other = await server.createTenant();
  const events = Array.from({ length: 100 }, (_, i) => ({
    user_id: `sb-${i % 10}`,
    event_name: 'tick',
    properties: i % 4 === 0 ? { plan: 'pro', n: i } : { n: i },
    timestamp: new Date(Date.UTC(2026, 2, 1, 0, i)).toISOString(),
  }));
  await tenant.client.eventsTrackBatch({ body: { events } });
  await tenant.client.eventsTrackBatch({ body: { events: events.map((e) => ({ ...e, event_name: 'tock' })) } });
  await other.client.eventsTrackBatch({
    body: { events: [{ user_id: 'secret-user', event_name: 'secret', properties: { plan: 'pro' } }] },
  });
});
afterAll(() => server?.close());

const refused: [string, string][] = [
  ['insert', "INSERT INTO events (event_name) VALUES ('x')"],
  ['update', "UPDATE events SET event_name = 'x'"],
  ['delete', 'DELETE FROM users'],
  ['several statements', 'SELECT 1; SELECT 2'],
  ['a statement after a select', 'SELECT 1; DROP TABLE events'],
  ['pg_sleep', 'SELECT pg_sleep(5)'],
  ['pg_catalog', 'SELECT * FROM pg_catalog.pg_class'],
  ['an unqualified catalog table', 'SELECT rolname FROM pg_authid'],
  ['information_schema', 'SELECT table_name FROM information_schema.tables'],
  ['a schema-qualified events', 'SELECT * FROM public.events'],
  ['a real table outside the sandbox', 'SELECT * FROM api_keys'],
  ['set_config', "SELECT set_config('statement_timeout', '0', false)"],
  ['current_setting', "SELECT current_setting('data_directory')"],
  ['SELECT INTO', 'SELECT * INTO stolen FROM events'],
  ['a data-changing CTE', 'WITH gone AS (DELETE FROM events RETURNING *) SELECT count(*) FROM gone'],
  ['COPY', 'COPY events TO STDOUT'],
  ['dblink', "SELECT * FROM dblink('host=evil', 'select 1') AS t(x int)"],
  ['lo_import', "SELECT lo_import('/etc/passwd')"],
  ['lo_export', "SELECT lo_export(1, '/tmp/x')"],
  ['pg_read_file', "SELECT pg_read_file('/etc/passwd')"],
  ['FOR UPDATE', 'SELECT * FROM events FOR UPDATE'],
  ['a regclass cast', "SELECT 'api_keys'::regclass"],
  ['current_user', 'SELECT current_user'],
  ['a CTE out of scope', 'SELECT * FROM (WITH pg_authid AS (SELECT 1) SELECT 1) x JOIN pg_authid ON true'],
  ['SET', 'SET ROLE postgres'],
  ['a parameter', 'SELECT $1'],
];

describe('refusals', () => {
  it.each(refused)('refuses %s with QUERY_REJECTED', async (_name, sql) => {
    const { error, response } = await query(tenant, sql);
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'QUERY_REJECTED', message: expect.any(String) });
  });

  it('refuses what embedded mode cannot bound, and runs it on PostgreSQL', async () => {
    const unbounded = [
      'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT max(n) AS n FROM r',
      'SELECT count(*) AS n FROM generate_series(1, 3)',
      "SELECT count(*) AS n FROM events WHERE event_name ~ '^t'",
      'SELECT count(*) AS n FROM events CROSS JOIN users',
      'SELECT count(*) AS n FROM events, users',
    ];
    for (const sql of unbounded) {
      const { data, error, response } = await query(tenant, sql);
      if (server.db.kind === 'pglite') {
        expect(response.status, sql).toBe(400);
        expect(error, sql).toMatchObject({ code: 'QUERY_REJECTED' });
      } else {
        expect(error, sql).toBeUndefined();
        expect(data!.data).toHaveLength(1);
      }
    }
  });

  it('gives the reason, and runs valid SQL with query_method sql', async () => {
    const { error } = await query(tenant, 'SELECT * FROM pg_catalog.pg_class');
    expect((error as { message: string }).message).toMatch(/schema-qualified/i);
    const { data } = await query(tenant, 'select count(*) as n from events;');
    expect(data).toMatchObject({
      success: true,
      data: [{ n: 200 }],
      rows_returned: 1,
      query_method: 'sql',
      truncated: false,
    });
    // What runs is printed back from the checked tree, not the caller's text.
    expect(data!.sql).toBe('SELECT count(*) AS n FROM events');
  });
});

describe('isolation and features', () => {
  it("never shows another app's rows", async () => {
    const { data } = await query(tenant, "SELECT count(*) AS n FROM events WHERE event_name = 'secret'");
    expect(data!.data).toEqual([{ n: 0 }]);
    const users = await query(tenant, 'SELECT user_id FROM users ORDER BY user_id');
    expect(users.data!.data.map((r) => r.user_id)).toEqual(Array.from({ length: 10 }, (_, i) => `sb-${i}`));
    const mine = await query(
      other,
      'SELECT e.event_name, u.user_id FROM events e JOIN users u ON u.user_id = e.user_id',
    );
    expect(mine.data!.data).toEqual([{ event_name: 'secret', user_id: 'secret-user' }]);
    const subquery = await query(other, 'SELECT (SELECT count(*) FROM events) AS e, (SELECT count(*) FROM users) AS u');
    expect(subquery.data!.data).toEqual([{ e: 1, u: 1 }]);
  });

  it('supports the jsonb ? operator and other jsonb operators', async () => {
    const { data, error } = await query(
      tenant,
      "SELECT count(*) AS n, sum((properties->>'n')::int) AS total FROM events WHERE event_name = 'tick' AND properties ? 'plan'",
    );
    expect(error).toBeUndefined();
    // i = 0, 4, ..., 96: 25 events, sum 4 * (0 + ... + 24) = 1200
    expect(data!.data).toEqual([{ n: 25, total: 1200 }]);
  });

  it('caps results at 10,000 rows and says so', async () => {
    // 200 events joined on a 2-valued key: 2 * 100 * 100 = 20,000 rows
    const { data } = await query(tenant, 'SELECT a.id FROM events a JOIN events b ON a.event_name = b.event_name');
    expect(data).toMatchObject({ rows_returned: 10_000, truncated: true });
    expect(data!.data).toHaveLength(10_000);
    const direct = await runSandboxedQuery(
      { sandbox: server.tally.sandbox, logger: undefined as never },
      tenant.app.id,
      'SELECT n FROM (SELECT (properties->>$$n$$)::int AS n FROM events) s ORDER BY n LIMIT 7',
      { timeoutMs: 5000, rowCap: 3 },
    );
    expect(direct).toMatchObject({ truncated: true, rows: [{ n: 0 }, { n: 0 }, { n: 1 }] });
  });

  it.runIf(process.env.TEST_DATABASE_URL)('runs as the confined sandbox role, read-only (PostgreSQL)', async () => {
    const ctx = { sandbox: server.tally.sandbox, logger: undefined as never };
    const who = await runOverRelations(
      ctx,
      tenant.app.id,
      'SELECT current_user AS u, current_setting($2) AS ro',
      ['transaction_read_only'],
      { timeoutMs: 5000 },
    );
    expect(who.rows).toEqual([{ u: expect.stringMatching(/_sandbox$/), ro: 'on' }]);
    // the role reads events and users only, even if a statement got past the checker
    await expect(
      runOverRelations(ctx, tenant.app.id, 'SELECT count(*) FROM public.api_keys', [], { timeoutMs: 5000 }),
    ).rejects.toMatchObject({
      code: 'QUERY_REJECTED',
      message: expect.stringMatching(/permission denied/),
    });
  });

  it('answers csv with a header row', async () => {
    const res = await query(
      tenant,
      "SELECT event_name, count(*) AS n, 'a,\"b' AS odd FROM events GROUP BY 1 ORDER BY 1",
      'csv',
    );
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('content-type')).toMatch(/^text\/csv/);
    const text = String(res.data);
    expect(text).toBe('event_name,n,odd\r\ntick,100,"a,""b"\r\ntock,100,"a,""b"\r\n');
  });
});

/** The statistics the embedded estimate rests on are gathered by the job runner, not by requests. */
async function refreshStatistics() {
  const job = await server.jobs.runNow(REFRESH_SANDBOX_STATISTICS);
  for (let i = 0; i < 300 && (await server.jobs.state(REFRESH_SANDBOX_STATISTICS, job)) !== 'completed'; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  expect(await server.jobs.state(REFRESH_SANDBOX_STATISTICS, job)).toBe('completed');
}

describe.runIf(!process.env.TEST_DATABASE_URL)('embedded mode guards', () => {
  it("vacuums events, users and the rollups questions read in the statistics job, as PostgreSQL's autovacuum would", async () => {
    const t = await server.createTenant();
    const events = Array.from({ length: 100 }, (_, i) => ({ user_id: `v-${i % 7}`, event_name: 'vacuumed' }));
    await t.client.eventsTrackBatch({ body: { events } });
    await foldRollups(server.db.knex);
    const tables = ['events', 'users', 'user_days', 'user_totals', 'app_days', 'app_day_events', 'event_slots'];
    const pages = async () =>
      (
        await server.db.knex.raw(
          `select relname, relpages, relallvisible, reltuples from pg_class where relname = any(?) order by 1`,
          [tables],
        )
      ).rows;
    await refreshStatistics();
    // Every page all-visible (ANALYZE alone leaves the new ones out), so covering indexes answer
    // alone; and rows counted for the planner (-1 until a table is first analyzed).
    const after = await pages();
    expect(after.map((r: { relname: string }) => r.relname)).toEqual([...tables].sort());
    for (const r of after) {
      expect(r.relallvisible, r.relname).toBe(r.relpages);
      expect(Number(r.reltuples), r.relname).toBeGreaterThan(0);
    }
  });

  it('refuses joins without an equality between columns', async () => {
    const { error, response } = await query(tenant, 'SELECT count(*) FROM events a JOIN events b ON a.id <> b.id');
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'QUERY_REJECTED', message: expect.stringMatching(/equality/) });
  });

  it('estimates a join from what the planner believes now, before and after its statistics are gathered', async () => {
    const t = await server.createTenant();
    const events = Array.from({ length: 100 }, (_, i) => ({ user_id: `j-${i % 10}`, event_name: i % 2 ? 'a' : 'b' }));
    await t.client.eventsTrackBatch({ body: { events } });
    // 2 names x 50 x 50 = 5,000 rows, whatever the planner's statistics said when the app was first asked
    const join = 'SELECT a.id FROM events a JOIN events b ON a.event_name = b.event_name';
    expect((await query(t, join)).data).toMatchObject({ rows_returned: 5_000, truncated: false });
    await refreshStatistics();
    const after = await query(t, join);
    expect(after.error).toBeUndefined();
    expect(after.data).toMatchObject({ rows_returned: 5_000, truncated: false });
  });

  it('refuses a query whose planner cost estimate is too high, before running it', async () => {
    await refreshStatistics();
    // 2 names x 100^5 = 20 billion joined rows: no statement timeout could stop it here. The plan's
    // cost is checked before its joins are (four tables came under the cost limit once the
    // statistics job vacuumed the tables, and were refused by the join check instead).
    const { error, response } = await query(
      tenant,
      `SELECT count(*) FROM events a JOIN events b ON a.event_name = b.event_name
         JOIN events c ON b.event_name = c.event_name JOIN events d ON c.event_name = d.event_name
         JOIN events e ON d.event_name = e.event_name`,
    );
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'QUERY_REJECTED', message: expect.stringMatching(/too expensive/) });
  });
});

describe.runIf(process.env.TEST_DATABASE_URL)('timeouts (PostgreSQL)', () => {
  it('cancels a runaway query with QUERY_TIMEOUT and keeps answering', async () => {
    const fast = await startTestServer({ ANALYTICS_QUERY_TIMEOUT_MS: '300' });
    try {
      const t = await fast.createTenant();
      const events = Array.from({ length: 100 }, (_, i) => ({ user_id: `to-${i}`, event_name: 'x' }));
      await t.client.eventsTrackBatch({ body: { events } });
      // 100^4 = 100 million rows: far longer than 300 ms
      const { error, response } = await query(
        t,
        'SELECT count(*) FROM events a CROSS JOIN events b CROSS JOIN events c CROSS JOIN events d',
      );
      expect(response.status).toBe(400);
      expect(error).toMatchObject({ code: 'QUERY_TIMEOUT' });
      const after = await query(t, 'SELECT count(*) AS n FROM events');
      expect(after.data!.data).toEqual([{ n: 100 }]);
    } finally {
      await fast.close();
    }
  });
});
