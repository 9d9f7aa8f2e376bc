// The second layer of the SQL sandbox, on PostgreSQL: a dedicated login role that confines a query
// even if the checker let something through. The role has no superuser rights and no memberships
// (so no SET ROLE leads anywhere), can read only the columns the sandbox relations need, sees only
// the request's app through row-level security, and cannot execute functions that run SQL text,
// touch the server or change settings (set_config: so a query cannot change the setting the
// row-level-security policy reads). Tally sets this up itself when its own role may (a superuser,
// or a role with CREATEROLE that owns the tables); otherwise an operator runs the SQL that
// `npx tally sandbox-sql` prints, once. The setup is checked before any caller SQL runs.
import { randomBytes } from 'node:crypto';
import type { Knex } from 'knex';
import type pg from 'pg';

/**
 * Columns of the real tables the sandbox role reads (ip, ua and the rest stay unreadable): the
 * sandbox relations' `events` and `users`, and the rollups (`user_days`, its unfolded
 * `activity_deltas`, the per-app daily sums of `app_days` and `app_day_events`, the per-user
 * `user_totals`, and the per-event
 * `event_slots` with their unfolded `event_deltas`), which only statements Tally writes itself
 * read (language/queries/compile-rollup.ts).
 */
export const SANDBOX_COLUMNS: Readonly<Record<SandboxTable, readonly string[]>> = {
  events: ['id', 'app_id', 'user_id', 'event_name', 'properties', 'created_at', 'is_bot'],
  users: [
    'id',
    'app_id',
    'external_id',
    'email',
    'phone',
    'properties',
    'origin',
    'created_at',
    'last_active',
    'event_count',
  ],
  user_days: ['app_id', 'day', 'user_id', 'events', 'revenue', 'revenue_events'],
  activity_deltas: ['app_id', 'user_id', 'slot', 'events', 'revenue', 'revenue_events'],
  app_days: ['app_id', 'day', 'revenue'],
  app_day_events: ['app_id', 'day', 'events', 'revenue_events', 'revenue'],
  user_totals: ['app_id', 'user_id', 'events', 'revenue_events', 'revenue'],
  event_slots: ['app_id', 'slot', 'event_name', 'events', 'revenue', 'revenue_events'],
  event_deltas: ['app_id', 'slot', 'event_name', 'events', 'revenue', 'revenue_events'],
};
type SandboxTable = 'events' | 'users' | (typeof ROLLUP_TABLES)[number];
/** The rollups' tables: each readable only with row-level security in force. */
const ROLLUP_TABLES = [
  'user_days',
  'activity_deltas',
  'app_days',
  'app_day_events',
  'user_totals',
  'event_slots',
  'event_deltas',
] as const;

/** The setting the row-level-security policies read; the sandbox sets it per transaction. */
export const APP_SETTING = 'tally.app_id';

/**
 * Functions of pg_catalog the sandbox role must not execute, as a predicate over pg_proc `p`:
 * those that run SQL text (ts_stat, ts_rewrite, the *_to_xml family), read or list server files,
 * sleep, signal or lock (advisory locks outlive a transaction), notify, reload, or change settings.
 */
export const FORBIDDEN_FUNCTIONS_PREDICATE = `p.pronamespace = 'pg_catalog'::regnamespace AND (
  p.proname IN ('ts_stat', 'ts_rewrite', 'set_config', 'pg_sleep', 'pg_sleep_for', 'pg_sleep_until',
    'pg_cancel_backend', 'pg_terminate_backend', 'pg_reload_conf', 'pg_rotate_logfile', 'pg_notify',
    'pg_current_logfile', 'pg_stat_file', 'pg_logical_emit_message', 'pg_log_backend_memory_contexts',
    'pg_import_system_collations', 'pg_export_snapshot', 'pg_create_restore_point', 'pg_switch_wal')
  OR p.proname LIKE '%to\\_xml%' OR p.proname LIKE 'pg\\_advisory%' OR p.proname LIKE 'pg\\_try\\_advisory%'
  OR p.proname LIKE 'pg\\_ls\\_%' OR p.proname LIKE 'pg\\_read\\_%' OR p.proname LIKE 'lo\\_%'
  OR p.proname LIKE 'pg\\_stat\\_reset%')`;

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;
const quoteLiteral = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** The sandbox role of a database: `<database>_sandbox`, as an identifier PostgreSQL accepts. */
export function sandboxRoleName(database: string): string {
  const base = database.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  return `${base.slice(0, 63 - '_sandbox'.length)}_sandbox`;
}

/**
 * Every statement of the setup, each idempotent. `appRole` gets back EXECUTE on the functions
 * revoked from PUBLIC (Tally's own role may need some, e.g. advisory locks for its job queue).
 * Each statement is guarded so that it changes nothing (and takes no lock) when already in place.
 */
export function sandboxSetupStatements(role: string, appRole: string, password: string | null): string[] {
  const r = quoteIdent(role);
  const lit = quoteLiteral(role);
  const rls = (table: string) => `DO $$ BEGIN
    IF NOT (SELECT relrowsecurity FROM pg_class WHERE oid = 'public.${table}'::regclass) THEN
      ALTER TABLE public.${table} ENABLE ROW LEVEL SECURITY;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'public' AND tablename = '${table}' AND policyname = 'tally_sandbox_app') THEN
      CREATE POLICY tally_sandbox_app ON public.${table} FOR SELECT TO ${r}
        USING (app_id = nullif(current_setting('${APP_SETTING}', true), '')::uuid);
    END IF;
  END $$`;
  const grant = (table: SandboxTable) => `DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM unnest(ARRAY['${SANDBOX_COLUMNS[table].join("','")}']) c
               WHERE NOT has_column_privilege(${lit}, 'public.${table}', c, 'SELECT')) THEN
      GRANT SELECT (${SANDBOX_COLUMNS[table].join(', ')}) ON public.${table} TO ${r};
    END IF;
  END $$`;
  return [
    `DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${lit}) THEN
        CREATE ROLE ${r} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS${
          password ? ` PASSWORD ${quoteLiteral(password)}` : ''
        };
      END IF;
    END $$`,
    `DO $$ BEGIN
      IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${lit}
                 AND (rolsuper OR rolcreatedb OR rolcreaterole OR rolinherit OR rolreplication OR rolbypassrls)) THEN
        ALTER ROLE ${r} NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
      END IF;
    END $$`,
    `DO $$ DECLARE m record; BEGIN
      FOR m IN SELECT g.rolname FROM pg_auth_members a JOIN pg_roles g ON g.oid = a.roleid
               JOIN pg_roles u ON u.oid = a.member WHERE u.rolname = ${lit} LOOP
        EXECUTE format('REVOKE %I FROM %I', m.rolname, ${lit});
      END LOOP;
    END $$`,
    `DO $$ BEGIN
      IF NOT has_schema_privilege(${lit}, 'public', 'USAGE') THEN GRANT USAGE ON SCHEMA public TO ${r}; END IF;
    END $$`,
    // Row-level security first, so no moment lets the role read another app's rollup rows.
    rls('events'),
    rls('users'),
    ...ROLLUP_TABLES.map(rls),
    grant('events'),
    grant('users'),
    ...ROLLUP_TABLES.map(grant),
    `DO $$ DECLARE f regprocedure; BEGIN
      FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE ${FORBIDDEN_FUNCTIONS_PREDICATE}
               AND has_function_privilege(${lit}, p.oid, 'EXECUTE') LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', f, ${quoteLiteral(appRole)});
      END LOOP;
    END $$`,
    // Tally's own role may signal the sandbox's backends (to stop a query that runs past its
    // timeout) once it has the sandbox role's privileges; the sandbox role gains nothing.
    `DO $$ BEGIN
      IF NOT pg_has_role(${quoteLiteral(appRole)}, ${lit}, 'USAGE') THEN
        GRANT ${r} TO ${quoteIdent(appRole)};
      END IF;
    END $$`,
  ];
}

/** The one-time SQL an operator runs as a superuser when Tally's own role cannot set this up. */
export function sandboxSetupScript(database: string, appRole: string, password: string): string {
  const role = sandboxRoleName(database);
  return [
    `-- Tally SQL sandbox: run once, as a superuser, connected to the database ${database}.`,
    `-- Then start Tally with SANDBOX_DATABASE_URL set to the same server and database, user ${role},`,
    '-- and the password below.',
    ...sandboxSetupStatements(role, appRole, password).map((s) => `${s};`),
    `ALTER ROLE ${quoteIdent(role)} PASSWORD ${quoteLiteral(password)};`,
    '',
  ].join('\n');
}

export const newSandboxPassword = () => randomBytes(24).toString('base64url');

/**
 * Applies the setup with Tally's own role, step by step: steps it has no right to take are
 * skipped (the confinement check then reports what is missing). Returns the role's name and the
 * password Tally stored for it (null when an operator created the role).
 */
export async function ensureSandboxSetup(knex: Knex): Promise<{ role: string; password: string | null }> {
  // Instances starting together take turns (concurrent GRANTs on one object can fail), and a
  // step that would wait long for a lock gives up: the check reports it and runs again later.
  return knex.transaction(async (trx) => {
    await trx.raw("SET LOCAL lock_timeout = '5s'");
    await trx.raw('SELECT pg_advisory_xact_lock(hashtext(?))', ['tally sandbox setup']);
    const { rows } = await trx.raw('SELECT current_database() AS db, current_user AS me');
    const role = sandboxRoleName(rows[0].db);
    const stored = await trx('sandbox_login').where({ role }).first();
    const roleExists = async () => (await trx.raw('SELECT 1 FROM pg_roles WHERE rolname = ?', [role])).rows.length > 0;
    const existed = await roleExists();
    const fresh = existed ? null : newSandboxPassword();
    for (const statement of sandboxSetupStatements(role, rows[0].me, fresh)) {
      await trx.raw(`DO $tally$ BEGIN EXECUTE ${quoteLiteral(statement)}; EXCEPTION WHEN insufficient_privilege OR
        undefined_object OR feature_not_supported THEN NULL; END $tally$`);
    }
    if (fresh && (await roleExists())) {
      await trx('sandbox_login').insert({ role, password: fresh }).onConflict('role').merge();
      return { role, password: fresh };
    }
    return { role, password: (stored?.password as string | undefined) ?? null };
  });
}

export interface Confinement {
  confined: boolean;
  /** What is wrong, in words an operator can act on. */
  problems: string[];
  /**
   * Whether the role reads the activity rollup (with row-level security in force on it): Tally's
   * questions read it when so, raw events otherwise (a setup an operator ran before it existed).
   */
  readsRollup?: boolean;
}

/** Checks, over a connection logged in as the sandbox role, that it is confined as it must be. */
export async function checkConfinement(client: pg.ClientBase): Promise<Confinement> {
  const problems: string[] = [];
  const role = (
    await client.query(`SELECT r.rolname, r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolcreatedb, r.rolreplication,
      (SELECT count(*)::int FROM pg_auth_members m WHERE m.member = r.oid) AS memberships
      FROM pg_roles r WHERE r.rolname = current_user`)
  ).rows[0];
  if (role.rolsuper || role.rolbypassrls || role.rolcreaterole || role.rolcreatedb || role.rolreplication) {
    problems.push(
      `the role ${role.rolname} has rights it must not have (superuser, BYPASSRLS, CREATEROLE, CREATEDB or REPLICATION)`,
    );
  }
  if (role.memberships > 0) problems.push(`the role ${role.rolname} is a member of other roles`);
  const executable = (
    await client.query(
      `SELECT p.oid::regprocedure::text AS f FROM pg_proc p WHERE ${FORBIDDEN_FUNCTIONS_PREDICATE}
       AND has_function_privilege(p.oid, 'EXECUTE') ORDER BY 1`,
    )
  ).rows.map((r: { f: string }) => r.f);
  if (executable.length > 0) {
    problems.push(
      `it may still execute ${executable.slice(0, 5).join(', ')}${executable.length > 5 ? ` and ${executable.length - 5} more` : ''}`,
    );
  }
  const rls = (
    await client.query(`SELECT c.relname, c.relrowsecurity,
      EXISTS (SELECT 1 FROM pg_policies p WHERE p.schemaname = 'public' AND p.tablename = c.relname
              AND p.policyname = 'tally_sandbox_app') AS policy
      FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
        AND c.relname IN ('events', 'users', ${ROLLUP_TABLES.map((t) => `'${t}'`).join(', ')})`)
  ).rows as { relname: string; relrowsecurity: boolean; policy: boolean }[];
  // A table the role can read at all (any column) must keep it to one app.
  const readable = (
    await client.query(
      `SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'public'::regnamespace
         AND c.relname IN ('events', 'users', ${ROLLUP_TABLES.map((t) => `'${t}'`).join(', ')})
         AND has_any_column_privilege(c.oid, 'SELECT')`,
    )
  ).rows.map((r: { relname: string }) => r.relname);
  for (const t of rls) {
    if (
      (!t.relrowsecurity || !t.policy) &&
      (readable.includes(t.relname) || !ROLLUP_TABLES.includes(t.relname as never))
    )
      problems.push(`row-level security is not in force on ${t.relname}`);
  }
  const reads = (
    await client.query(`SELECT has_column_privilege('public.events', 'event_name', 'SELECT') AS events,
      has_column_privilege('public.users', 'external_id', 'SELECT') AS users,
      has_column_privilege('public.user_days', 'events', 'SELECT')
        AND has_column_privilege('public.activity_deltas', 'slot', 'SELECT')
        AND has_column_privilege('public.app_days', 'revenue', 'SELECT')
        AND has_column_privilege('public.app_day_events', 'events', 'SELECT')
        AND has_column_privilege('public.user_totals', 'events', 'SELECT')
        AND has_column_privilege('public.event_slots', 'events', 'SELECT')
        AND has_column_privilege('public.event_deltas', 'events', 'SELECT') AS rollup`)
  ).rows[0];
  if (!reads.events || !reads.users) problems.push('it cannot read the events and users it must');
  return { confined: problems.length === 0, problems, readsRollup: reads.rollup === true };
}
