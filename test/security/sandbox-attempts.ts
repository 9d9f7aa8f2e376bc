// Attacks on the SQL sandbox, as one tenant's REST key could send them through
// POST /v1/analytics/query. Each must be refused (400 QUERY_REJECTED) or harmless: it answers
// only its own app's rows, within the caps, or times out, and the service answers normally after.
// `refused: true` marks those the checker must refuse outright on both databases.
import { AMPLIFICATION } from './sandbox-amplification.js';

export interface Attempt {
  name: string;
  sql: string;
  /** The checker refuses it (400 QUERY_REJECTED) in both modes. */
  refused?: boolean;
  /** Slow on purpose (runs into the time cap); run with a short timeout. */
  slow?: boolean;
}

/** Functions that run SQL text, touch the server, sleep, lock, signal or change settings. */
const DANGEROUS: [string, string][] = [
  ['ts_stat', "'select email from public.users'"],
  ['ts_rewrite', "'a'::text"],
  ['query_to_xml', "'select * from public.api_keys', true, true, ''"],
  ['query_to_xmlschema', "'select 1', true, true, ''"],
  ['query_to_xml_and_xmlschema', "'select 1', true, true, ''"],
  ['cursor_to_xml', "'c', 1, true, true, ''"],
  ['table_to_xml', "'public.api_keys', true, true, ''"],
  ['schema_to_xml', "'public', true, true, ''"],
  ['database_to_xml', "true, true, ''"],
  ['set_config', "'search_path', 'pg_catalog', false"],
  ['current_setting', "'data_directory'"],
  ['pg_sleep', '3'],
  ['pg_sleep_for', "'3 seconds'"],
  ['pg_read_file', "'/etc/passwd'"],
  ['pg_read_binary_file', "'/etc/passwd'"],
  ['pg_ls_dir', "'.'"],
  ['pg_stat_file', "'postgresql.conf'"],
  ['pg_cancel_backend', 'pg_backend_pid()'],
  ['pg_terminate_backend', '1'],
  ['pg_reload_conf', ''],
  ['pg_advisory_lock', '42'],
  ['pg_try_advisory_lock', '42'],
  ['pg_notify', "'c', 'x'"],
  ['lo_import', "'/etc/passwd'"],
  ['lo_export', "1, '/tmp/tally-x'"],
  ['pg_get_userbyid', '10'],
  ['to_regclass', "'public.api_keys'"],
  ['pg_get_viewdef', "'pg_roles'"],
  ['format', "'%500000000s', 'x'"],
  ['repeat', "'x', 100000000"],
  ['lpad', "'x', 100000000"],
  ['version', ''],
  ['txid_current', ''],
  ['pg_backend_pid', ''],
  ['inet_server_addr', ''],
  ['dblink', "'host=127.0.0.1', 'select 1'"],
];

/** Every syntactic way of reaching a function that PostgreSQL offers. */
const WAYS: [string, (f: string, args: string) => string][] = [
  ['a call', (f, a) => `SELECT ${f}(${a})`],
  ['a pg_catalog-qualified call', (f, a) => `SELECT pg_catalog.${f}(${a})`],
  ['a quoted name', (f, a) => `SELECT "${f}"(${a})`],
  ['an upper-case name', (f, a) => `SELECT ${f.toUpperCase()}(${a})`],
  [
    'a Unicode-escaped name',
    (f, a) => `SELECT U&"${[...f].map((c) => `\\${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"(${a})`,
  ],
  ['field selection on an expression', (f, a) => `SELECT ((${a.split(',')[0] || "'x'"})::text).${f}`],
  ['field selection on a table alias', (f) => `SELECT e.${f} FROM events e`],
  ['field selection on a column', (f) => `SELECT u.email.${f} FROM users u`],
  ['a function in FROM', (f, a) => `SELECT * FROM ${f}(${a}) AS x`],
  ['a call in WHERE', (f, a) => `SELECT count(*) FROM events WHERE ${f}(${a}) IS NOT NULL`],
  ['a call in a CTE', (f, a) => `WITH x AS (SELECT ${f}(${a}) AS v) SELECT * FROM x`],
  ['a call in a LATERAL subquery', (f, a) => `SELECT * FROM events e, LATERAL (SELECT ${f}(${a})) s LIMIT 1`],
  ['a call in ORDER BY', (f, a) => `SELECT id FROM events ORDER BY ${f}(${a}) LIMIT 1`],
  ['a call in a window frame', (f, a) => `SELECT count(*) OVER (ORDER BY ${f}(${a})) FROM events LIMIT 1`],
  ['a call in an aggregate FILTER', (f, a) => `SELECT count(*) FILTER (WHERE ${f}(${a}) IS NULL) FROM events`],
  ['a call in a VALUES list', (f, a) => `SELECT * FROM (VALUES (${f}(${a}))) v`],
];

/** The dangerous functions every way (sleeping ones only in the fast ways: they are refused). */
function functionAttempts(): Attempt[] {
  const out: Attempt[] = [];
  for (const [f, args] of DANGEROUS) {
    for (const [way, build] of WAYS) {
      // Keep the suite to the combinations that differ: every way for the worst functions,
      // the three plainest ways for the rest.
      const worst = ['ts_stat', 'query_to_xml', 'set_config', 'pg_sleep', 'pg_read_file', 'table_to_xml'].includes(f);
      if (!worst && !['a call', 'a pg_catalog-qualified call', 'field selection on an expression'].includes(way)) {
        continue;
      }
      out.push({ name: `${f} through ${way}`, sql: build(f, args), refused: true });
    }
  }
  return out;
}

const CASTS = [
  "SELECT 'public.api_keys'::regclass",
  "SELECT CAST('public.api_keys' AS regclass)",
  "SELECT regclass 'public.api_keys'",
  "SELECT 'public.api_keys'::pg_catalog.regclass",
  "SELECT 'pg_sleep'::regproc",
  "SELECT 'pg_sleep(double precision)'::regprocedure",
  "SELECT 'postgres'::regrole",
  "SELECT 'public'::regnamespace",
  "SELECT 'int4'::regtype",
  "SELECT 'english'::regconfig",
  "SELECT '<a/>'::xml",
  "SELECT 'a & b'::tsquery",
  "SELECT 'a b'::tsvector",
  "SELECT '0/0'::pg_lsn",
  "SELECT '{public.api_keys}'::regclass[]",
  'SELECT \'x\'::"regclass"',
  "SELECT 'x'::public.my_type",
  "SELECT '(1)'::record",
  "SELECT 'x'::cstring",
  "SELECT ('1')::int4::regclass",
  'SELECT 1::oid',
  "SELECT '1'::xid",
  "SELECT 'x'::bytea",
];

const RELATIONS = [
  'SELECT * FROM api_keys',
  'SELECT * FROM public.api_keys',
  'SELECT * FROM "public"."api_keys"',
  'SELECT * FROM public.events',
  'SELECT * FROM public.users',
  'SELECT * FROM sandbox_login',
  'SELECT * FROM pg_class',
  'SELECT * FROM pg_catalog.pg_class',
  'SELECT rolname, rolpassword FROM pg_authid',
  'SELECT * FROM pg_shadow',
  'SELECT * FROM pg_settings',
  'SELECT * FROM pg_stat_activity',
  'SELECT * FROM pg_roles',
  'SELECT * FROM information_schema.tables',
  'SELECT * FROM pg_temp.x',
  'SELECT * FROM organizations',
  'SELECT * FROM apps',
  'SELECT * FROM push_providers',
  'SELECT * FROM audiences',
  'SELECT * FROM event_dedup',
  'TABLE api_keys',
  'SELECT * FROM events TABLESAMPLE SYSTEM (10)',
  "SELECT * FROM XMLTABLE('/a' PASSING '<a/>' COLUMNS x text)",
  'SELECT * FROM (WITH pg_authid AS (SELECT 1) SELECT 1) x JOIN pg_authid ON true',
  'SELECT (SELECT count(*) FROM api_keys)',
  'SELECT 1 WHERE EXISTS (SELECT 1 FROM public.api_keys)',
  'SELECT id FROM events UNION SELECT id FROM public.api_keys',
  'SELECT * FROM events e JOIN public.users u ON true',
  "SELECT * FROM events WHERE app_id <> '00000000-0000-0000-0000-000000000000'",
];

const STATEMENTS = [
  "INSERT INTO events (event_name) VALUES ('x')",
  "UPDATE users SET email = 'x'",
  'DELETE FROM events',
  'TRUNCATE events',
  'DROP TABLE events',
  'CREATE TABLE stolen AS SELECT * FROM users',
  'SELECT * INTO stolen FROM events',
  'ALTER TABLE events DISABLE ROW LEVEL SECURITY',
  'GRANT ALL ON api_keys TO PUBLIC',
  'SET ROLE postgres',
  'SET search_path = pg_catalog',
  "SET tally.app_id = '00000000-0000-0000-0000-000000000000'",
  'RESET ALL',
  'SHOW data_directory',
  'DO $$ BEGIN PERFORM pg_sleep(1); END $$',
  'CALL x()',
  'EXPLAIN ANALYZE SELECT 1',
  'PREPARE p AS SELECT 1',
  'EXECUTE p',
  'DECLARE c CURSOR FOR SELECT 1',
  'LISTEN x',
  "NOTIFY x, 'y'",
  'LOCK TABLE events',
  'VACUUM events',
  'ANALYZE events',
  'BEGIN',
  'COMMIT',
  'ROLLBACK',
  'SAVEPOINT s',
  'COPY events TO STDOUT',
  "COPY (SELECT 1) TO '/tmp/tally-x'",
  "COPY events FROM PROGRAM 'id'",
  "LOAD 'plpgsql'",
  'DISCARD ALL',
  'CHECKPOINT',
  "COMMENT ON TABLE events IS 'x'",
  'MERGE INTO events USING users ON false WHEN MATCHED THEN DELETE',
  'SELECT 1; SELECT 2',
  'SELECT 1; DROP TABLE events',
  'SELECT 1; SET ROLE postgres',
  'WITH gone AS (DELETE FROM events RETURNING *) SELECT count(*) FROM gone',
  "WITH x AS (INSERT INTO events (event_name) VALUES ('x') RETURNING 1) SELECT * FROM x",
  'WITH x AS (UPDATE users SET email = NULL RETURNING 1) SELECT * FROM x',
  'SELECT * FROM events FOR UPDATE',
  'SELECT * FROM events FOR SHARE',
  'SELECT * FROM events FOR NO KEY UPDATE',
  'SELECT * FROM events FOR KEY SHARE SKIP LOCKED',
];

const SYNTAX = [
  'SELECT $1',
  'SELECT $2::text',
  'SELECT current_user',
  'SELECT session_user',
  'SELECT current_role',
  'SELECT user',
  'SELECT current_schema',
  'SELECT current_catalog',
  'SELECT system_user',
  'SELECT 1 OPERATOR(pg_catalog.+) 1',
  'SELECT 1 OPERATOR(public.+) 1',
  "SELECT 'a' @@ 'b'",
  'SELECT properties @? \'$.a ? (@ like_regex "(a+)+$")\' FROM events',
  'SELECT 1 !! 2',
  'SELECT xmlelement(name a)',
  "SELECT xmlparse(document '<a/>')",
  "SELECT json_object('a': 1)",
  'SELECT 1 IS JSON',
  'SELECT (ROW(1, 2)).f1',
  'SELECT u.email.length FROM users u',
  "SELECT s.ts_stat FROM (SELECT 'select 1' AS ts_stat) s",
  'SELECT ts_stat.ts_stat FROM jsonb_array_elements_text(\'["select 1"]\') AS ts_stat',
  "SELECT x.value FROM jsonb_each('{}') AS x(key text, value text)",
  'SELECT * FROM ROWS FROM (pg_sleep(1)) x',
  'SELECT e.* FROM events e, LATERAL pg_sleep(1) s',
  'SELECT (SELECT 1 FROM events LIMIT 1 FOR UPDATE)',
  'SELECT 1 COLLATE pg_catalog."C"',
  "SELECT 'x' COLLATE public.evil",
  'SELECT 1 -- comment\n; SELECT 2',
  'SELECT 1)) AS x; SELECT ((1',
  'SELECT $$x$$; SELECT $tag$ y $tag$',
  "SELECT E'\\x00'",
  "SELECT 'a' || chr(0)",
  'SELECT GROUPING(event_name) FROM events GROUP BY CUBE(event_name, (SELECT pg_sleep(1)))',
];

/** Queries the checker lets through: they must still see only their own app, within the caps. */
export const HARMLESS: Attempt[] = [
  { name: 'every event', sql: 'SELECT * FROM events' },
  { name: 'every user', sql: 'SELECT * FROM users' },
  {
    name: 'events joined to users',
    sql: 'SELECT e.event_name, u.email FROM events e JOIN users u ON u.user_id = e.user_id',
  },
  {
    name: 'a correlated subquery',
    sql: 'SELECT u.user_id, (SELECT count(*) FROM events e WHERE e.user_id = u.user_id) AS n FROM users u',
  },
  { name: 'a union of both relations', sql: 'SELECT user_id FROM events UNION SELECT user_id FROM users' },
  {
    name: 'a search for the other tenant by name',
    sql: "SELECT count(*) AS n FROM events WHERE event_name LIKE '%SECRET%'",
  },
  {
    name: 'a search for the other tenant in properties',
    sql: "SELECT count(*) AS n FROM events WHERE properties::text LIKE '%SECRET%'",
  },
  { name: 'a CTE named like a catalog', sql: 'WITH pg_authid AS (SELECT user_id FROM users) SELECT * FROM pg_authid' },
  { name: 'a CTE named api_keys', sql: 'WITH api_keys AS (SELECT 1 AS x) SELECT * FROM api_keys' },
  {
    name: 'a self-join capped at 10,000 rows',
    sql: 'SELECT a.id FROM events a JOIN events b ON a.event_name = b.event_name',
  },
  {
    name: 'wide rows capped by bytes',
    sql: 'SELECT a.properties, b.properties AS p2, a.id FROM events a JOIN events b ON a.event_name = b.event_name',
  },
  {
    name: 'a string aggregate over every event',
    sql: "SELECT string_agg(event_name, ',') AS s FROM events",
    refused: true,
  },
  {
    name: 'a string aggregate over a bounded subquery',
    sql: "SELECT string_agg(event_name, ',') AS s FROM (SELECT DISTINCT event_name FROM events LIMIT 50) t",
  },
  { name: 'padding to a width written in the query', sql: "SELECT lpad(event_name, 20, '.') AS p FROM events LIMIT 5" },
  { name: 'a short repeat', sql: "SELECT repeat('ab', 10) AS r" },
  {
    name: 'jsonb keys and values',
    sql: 'SELECT j.key, count(*) FROM events, jsonb_each(events.properties) j GROUP BY 1',
  },
  { name: 'array subscripts', sql: "SELECT (properties -> 'tags') -> 0 FROM events LIMIT 3" },
  { name: 'typed literals', sql: "SELECT date '2026-01-01' + interval '1 day', '1'::int8, 'x'::varchar(3)" },
  { name: 'row_to_json of a whole row', sql: 'SELECT row_to_json(e) FROM events e LIMIT 2' },
  { name: 'to_jsonb of users', sql: 'SELECT to_jsonb(u) FROM users u' },
  {
    name: 'window functions',
    sql: 'SELECT user_id, rank() OVER (PARTITION BY user_id ORDER BY created_at) FROM events LIMIT 20',
  },
  {
    name: 'a 2,000-term IN list',
    sql: `SELECT count(*) AS n FROM events WHERE event_name IN (${Array.from({ length: 2_000 }, (_, i) => `'e${i}'`).join(',')})`,
  },
  { name: 'deeply nested parentheses', sql: `SELECT ${'('.repeat(150)}1${')'.repeat(150)} AS x` },
  { name: 'ONLY on a relation', sql: 'SELECT count(*) FROM ONLY events' },
  {
    name: 'a comment hiding a statement',
    sql: "SELECT count(*) FROM events WHERE event_name = 'a' /* ; DROP TABLE events */",
  },
  { name: 'too deeply nested calls', sql: `SELECT ${'abs('.repeat(300)}1${')'.repeat(300)} AS x`, refused: true },
  { name: 'too deeply nested parentheses', sql: `SELECT ${'('.repeat(3000)}1${')'.repeat(3000)} AS x` },
  { name: 'ids of both relations', sql: 'SELECT id FROM events UNION ALL SELECT id FROM users' },
  { name: 'md5 of emails', sql: 'SELECT md5(email) FROM users' },
  {
    name: 'a recursive CTE',
    sql: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT max(n) FROM r',
  },
  { name: 'generate_series', sql: 'SELECT count(*) FROM generate_series(1, 1000)' },
  { name: 'a regular expression', sql: "SELECT count(*) FROM events WHERE event_name ~ '^t'" },
];

/** Exhaustion: each must time out or be refused, and leave the service answering. */
export const EXHAUSTION: Attempt[] = [
  {
    name: 'the triple self-join the planner misestimates',
    sql: `select count(*) from events a join events b on a.event_name=b.event_name join events c on b.event_name=c.event_name
      where a.event_name='tick' and b.event_name='tick' and c.event_name='tick' and a.properties->>'zz' is null
      and b.properties->>'zz' is null and c.properties->>'zz' is null`,
    slow: true,
  },
  {
    name: 'a quadruple self-join',
    sql: 'SELECT count(*) FROM events a JOIN events b ON a.user_id = b.user_id JOIN events c ON b.user_id = c.user_id JOIN events d ON c.user_id = d.user_id',
    slow: true,
  },
  {
    name: 'an endless recursive CTE',
    sql: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r',
    slow: true,
  },
  { name: 'a billion-row series', sql: 'SELECT count(*) FROM generate_series(1, 1000000000)', slow: true },
  {
    name: 'catastrophic regex backtracking',
    sql: "SELECT 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' ~ '^(a+)+$'",
    slow: true,
  },
  {
    name: 'a cross join',
    sql: 'SELECT count(*) FROM events CROSS JOIN events e2 CROSS JOIN events e3 CROSS JOIN events e4',
    slow: true,
  },
];

export const REFUSED: Attempt[] = [
  ...functionAttempts(),
  ...CASTS.map((sql) => ({ name: `a cast: ${sql}`, sql, refused: true })),
  ...RELATIONS.map((sql) => ({ name: `a relation: ${sql}`, sql, refused: true })),
  ...STATEMENTS.map((sql) => ({ name: `a statement: ${sql}`, sql, refused: true })),
  ...SYNTAX.map((sql) => ({ name: `syntax: ${sql}`, sql, refused: true })),
  ...AMPLIFICATION.map((a) => ({ ...a, name: `amplification: ${a.name}`, refused: true })),
];
