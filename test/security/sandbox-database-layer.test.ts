// The sandbox's database layer on its own (PostgreSQL): with the checker switched off by the
// test-only switch, caller SQL runs as written (inside the relation CTEs) as the confined sandbox
// role. It must still see only its own app's rows, never keys or files, never change its role or
// the row-level-security setting, and a second statement is refused by the protocol.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { disableSandboxCheckerForTests } from '../../server/src/sandbox/sandbox.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;
let victim: Tenant;

const query = async (sql: string) => {
  const res = await fetch(`${server.url}/v1/analytics/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: tenant.app.id, query: sql }),
  });
  const text = await res.text();
  return {
    status: res.status,
    text,
    body: JSON.parse(text) as { code?: string; message?: string; data?: Record<string, unknown>[] },
  };
};

describe.runIf(process.env.TEST_DATABASE_URL)('with the checker off (PostgreSQL)', () => {
  beforeAll(async () => {
    server = await startTestServer();
    tenant = await server.createTenant();
    victim = await server.createTenant();
    await tenant.client.eventsTrackBatch({
      body: { events: Array.from({ length: 5 }, (_, i) => ({ user_id: `own-${i}`, event_name: 'own' })) },
    });
    await victim.client.usersUpsert({ body: { user_id: 'victim', email: 'victim-secret@example.com' } });
    await victim.client.eventsTrack({ body: { user_id: 'victim', event_name: 'VICTIM-SECRET' } });
    disableSandboxCheckerForTests(true);
  });
  afterAll(async () => {
    disableSandboxCheckerForTests(false);
    await server?.close();
  });

  it('runs what the checker would refuse, as the sandbox role', async () => {
    const who = await query(
      `SELECT current_user AS u, r.rolsuper AS superuser, r.rolbypassrls AS bypass,
         (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid) AS memberships
       FROM pg_roles r WHERE r.rolname = current_user`,
    );
    expect(who.status).toBe(200);
    expect(who.body.data).toEqual([
      { u: expect.stringMatching(/_sandbox$/), superuser: false, bypass: false, memberships: 0 },
    ]);
  });

  it("sees only its own app's rows of the real tables", async () => {
    const events = await query('SELECT count(*) AS n, count(DISTINCT app_id) AS apps FROM public.events');
    expect(events.body.data).toEqual([{ n: 5, apps: 1 }]);
    const users = await query('SELECT external_id, email FROM public.users ORDER BY 1');
    expect(users.body.data!.map((r) => r.external_id)).toEqual(['own-0', 'own-1', 'own-2', 'own-3', 'own-4']);
    const secret = await query("SELECT count(*) AS n FROM public.events WHERE event_name = 'VICTIM-SECRET'");
    expect(secret.body.data).toEqual([{ n: 0 }]);
    expect(users.text).not.toContain('victim-secret');
  });

  it("sees only its own app's rows of the activity rollup, which Tally's questions read", async () => {
    await foldRollups(server.db.knex); // both apps' deltas into user_days and app_days
    const rollup = await query(
      `SELECT count(DISTINCT app_id) AS apps, count(*) > 0 AS some FROM (
         SELECT app_id FROM public.user_days UNION ALL SELECT app_id FROM public.activity_deltas
         UNION ALL SELECT app_id FROM public.app_days) s`,
    );
    expect(rollup.body.data).toEqual([{ apps: 1, some: true }]);
    const own = await query(
      'SELECT DISTINCT app_id FROM public.user_days UNION SELECT app_id FROM public.activity_deltas',
    );
    expect(own.body.data).toEqual([{ app_id: tenant.app.id }]);
    const days = await query('SELECT DISTINCT app_id FROM public.app_days');
    expect(days.body.data).toEqual([{ app_id: tenant.app.id }]);
    const totals = await query('SELECT DISTINCT app_id FROM public.user_totals');
    expect(totals.body.data).toEqual([{ app_id: tenant.app.id }]);
    const names = await query(
      'SELECT DISTINCT app_id FROM public.event_slots UNION SELECT app_id FROM public.event_deltas',
    );
    expect(names.body.data).toEqual([{ app_id: tenant.app.id }]);
    const tables = [
      'user_days',
      'activity_deltas',
      'app_days',
      'app_day_events',
      'user_totals',
      'event_slots',
      'event_deltas',
    ];
    for (const table of tables) {
      const other = await query(`SELECT count(*) AS n FROM public.${table} WHERE app_id = '${victim.app.id}'`);
      expect(other.body.data, table).toEqual([{ n: 0 }]);
    }
  });

  it('cannot read the columns it was not granted, keys, other tables or files', async () => {
    for (const sql of [
      'SELECT ip, ua FROM public.events',
      'SELECT id FROM public.activity_deltas',
      'SELECT id FROM public.event_deltas',
      'SELECT active FROM public.app_days',
      'SELECT * FROM public.app_periods',
      'SELECT * FROM public.app_rollups',
      'SELECT * FROM public.property_slots',
      'SELECT key FROM public.property_deltas',
      'SELECT * FROM public.api_keys',
      'SELECT * FROM public.sandbox_login',
      'SELECT * FROM public.organizations',
      'SELECT * FROM public.push_providers',
      "SELECT pg_read_file('/etc/passwd')",
      "SELECT pg_ls_dir('.')",
      "SELECT lo_import('/etc/passwd')",
      "SELECT ts_stat('select email from public.users')",
      "SELECT query_to_xml('select * from public.api_keys', true, true, '')",
      "SELECT table_to_xml('public.api_keys', true, true, '')",
      'SELECT pg_sleep(1)',
      'SELECT pg_advisory_lock(1)',
      "SELECT pg_notify('x', 'y')",
    ]) {
      const { status, body } = await query(sql);
      expect({ sql, status, code: body.code }).toEqual({ sql, status: 400, code: 'QUERY_REJECTED' });
      expect(body.message).toMatch(/permission denied/);
    }
  });

  it("cannot call the event writer's function to write into another app", async () => {
    const event = JSON.stringify([
      {
        i: 0,
        req: 0,
        ref: 'forged',
        name: 'FORGED',
        created_at: new Date().toISOString(),
        received_at: new Date().toISOString(),
        id: '01900000-0000-7000-8000-000000000001',
        source: 'api',
        is_bot: false,
        new_user: '01900000-0000-7000-8000-000000000002',
        new_def: '01900000-0000-7000-8000-000000000003',
      },
    ]);
    const { status, body } = await query(
      `SELECT public.tally_ingest('${victim.app.id}'::uuid, '${event}'::jsonb, '[]'::jsonb, false, '7 days'::interval)`,
    );
    expect({ status, code: body.code }).toEqual({ status: 400, code: 'QUERY_REJECTED' });
    // Refused at the function itself (EXECUTE is revoked from PUBLIC), before any table's grants.
    expect(body.message).toMatch(/permission denied for function tally_ingest/);
    const forged = await server.db.knex('events').where({ app_id: victim.app.id, event_name: 'FORGED' }).first();
    expect(forged).toBeUndefined();
  });

  it('cannot change its role or the setting row-level security reads', async () => {
    for (const sql of [
      "SELECT set_config('role', 'none', true)",
      "SELECT set_config('role', 'postgres', false)",
      `SELECT set_config('tally.app_id', '${victim.app.id}', true)`,
      "SELECT set_config('search_path', 'pg_catalog', false)",
    ]) {
      const { status, body } = await query(sql);
      expect({ sql, status, code: body.code }).toEqual({ sql, status: 400, code: 'QUERY_REJECTED' });
      expect(body.message).toMatch(/permission denied/);
    }
    const setting = await query("SELECT current_setting('tally.app_id') AS app");
    expect(setting.body.data).toEqual([{ app: tenant.app.id }]);
  });

  it('refuses a second statement at the protocol', async () => {
    for (const sql of [
      'SELECT 1) AS s; SET ROLE postgres; SELECT * FROM (SELECT 1',
      `SELECT 1) AS s; SET tally.app_id = '${victim.app.id}'; SELECT * FROM (SELECT event_name FROM public.events`,
    ]) {
      const { status, body } = await query(sql);
      expect(status).toBe(400);
      expect(body.message).toMatch(/multiple commands/);
    }
    const after = await query('SELECT count(*) AS n FROM events');
    expect(after.body.data).toEqual([{ n: 5 }]);
  });
});
