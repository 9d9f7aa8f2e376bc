// Attacks that build a large value from small input (issue 25): replace, repeat, padding and
// char(n) casts, aggregates of rows, arrays, JSON and numeric tricks, doubling through CTEs. Many
// run as one call that no statement timeout interrupts, or reach PostgreSQL's 1 GB allocation
// limit; the checker's size pass must refuse each (400 QUERY_REJECTED) before it runs, on both
// databases. Part of the attack list of sandbox-attempts.ts.
import type { Attempt } from './sandbox-attempts.js';

const A5000 = `'${'a'.repeat(5_000)}'`;

/**
 * Values built large from small input, often in one call no statement timeout interrupts (issue
 * 25): the checker's size pass refuses each before it runs, on both databases.
 */
export const AMPLIFICATION: Attempt[] = [
  {
    name: 'nested replace (the issue: 22 s under a 10 s timeout)',
    sql: `SELECT length(replace(replace(${A5000}, 'a', ${A5000}), 'a', '${'a'.repeat(42)}'))`,
  },
  {
    name: 'string_agg over char(1000000) (the issue: 1 GB allocation)',
    sql: "SELECT string_agg(concat('x'::char(1000000)), '') FROM events",
  },
  { name: 'a char(1000000) cast', sql: "SELECT length('x'::char(1000000))" },
  { name: 'a character(2000) cast', sql: "SELECT length(CAST('x' AS character(2000)))" },
  { name: 'a bpchar(1001) cast', sql: "SELECT length('x'::bpchar(1001))" },
  { name: 'a varchar(5000) cast', sql: "SELECT 'x'::varchar(5000)" },
  { name: 'repeat to 100 MB', sql: "SELECT length(repeat('x', 100000000))" },
  { name: 'repeat with a computed count', sql: 'SELECT length(repeat(event_name, event_count::int)) FROM users' },
  { name: 'lpad to 100 MB', sql: "SELECT length(lpad('x', 100000000))" },
  { name: 'rpad with a computed width', sql: "SELECT length(rpad('x', event_count::int * 1000000, 'ab')) FROM users" },
  {
    name: 'concatenation doubling through CTEs',
    sql: "WITH a AS (SELECT rpad('x', 4000000, 'x') AS s), b AS (SELECT s || s || s || s AS s FROM a), c AS (SELECT s || s AS s FROM b) SELECT length(s) FROM c",
  },
  {
    name: 'concat_ws over padded casts',
    sql: "WITH a AS (SELECT 'x'::char(1000) AS c) SELECT length(concat_ws(rpad(',', 4000000), c, c, c, c, c)) FROM a",
  },
  {
    name: 'stored properties doubled through CTEs',
    sql: 'WITH a AS (SELECT properties::text AS s FROM events), b AS (SELECT s || s AS s FROM a), c AS (SELECT s || s AS s FROM b), d AS (SELECT s || s AS s FROM c), e AS (SELECT s || s || s AS s FROM d) SELECT max(length(s)) FROM e',
  },
  {
    name: 'replace over stored properties',
    sql: `SELECT length(replace(properties::text, '"', repeat('"', 100))) FROM events`,
  },
  { name: 'string_agg over every event', sql: "SELECT length(string_agg(properties::text, '')) FROM events" },
  { name: 'array_agg over every event', sql: 'SELECT cardinality(array_agg(properties)) FROM events' },
  { name: 'json_agg of whole rows', sql: 'SELECT json_agg(e) FROM events e' },
  {
    name: 'jsonb_agg over a self-join',
    sql: 'SELECT jsonb_agg(a.properties) FROM events a JOIN events b ON a.user_id = b.user_id',
  },
  { name: 'json_object_agg', sql: 'SELECT json_object_agg(id, properties) FROM events' },
  { name: 'jsonb_object_agg', sql: 'SELECT jsonb_object_agg(id, properties) FROM users' },
  {
    name: 'string_agg of large values over a LIMIT',
    sql: "SELECT length(string_agg(p, '')) FROM (SELECT properties::text AS p FROM events LIMIT 1000) t",
  },
  { name: 'ARRAY(subquery) over every event', sql: 'SELECT cardinality(ARRAY(SELECT properties FROM events))' },
  {
    name: 'an aggregate of the outer query in a subquery',
    sql: "SELECT (SELECT string_agg(e.properties::text, '')) FROM events e",
  },
  {
    name: 'ARRAY(generate_series) of 100 million',
    sql: 'SELECT cardinality(ARRAY(SELECT generate_series(1, 100000000)))',
  },
  {
    name: 'array_agg over generate_series',
    sql: 'SELECT cardinality(array_agg(g)) FROM generate_series(1, 100000000) g',
  },
  {
    name: 'array_fill to 100 million',
    sql: "SELECT length(array_to_string(array_fill('x'::text, ARRAY[100000000]), ''))",
  },
  { name: 'format with a width', sql: "SELECT length(format('%500000000s', 'x'))" },
  {
    name: 'overlay of padded strings',
    sql: "SELECT length(overlay(rpad('x', 4000000) placing rpad('y', 4000000) from 2))",
  },
  {
    name: 'translate into multi-byte characters',
    sql: "SELECT octet_length(translate(rpad('a', 4000000, 'a'), 'a', 'é'))",
  },
  { name: 'to_char with a long template', sql: "SELECT length(to_char(now(), rpad('J', 1000000, 'J')))" },
  {
    name: 'regexp_replace with back-references',
    sql: "SELECT length(regexp_replace(rpad('a', 100000, 'a'), 'a', rpad('\\&', 1000, '\\&'), 'g'))",
  },
  {
    name: 'string_to_array into array_to_string with a wide separator',
    sql: "SELECT length(array_to_string(string_to_array(rpad('a', 4000000, 'a'), NULL), rpad(',', 1000)))",
  },
  {
    name: 'jsonb_build_array of escaped strings',
    sql: `SELECT length(jsonb_build_array(p, p, p, p)::text) FROM (SELECT rpad('"', 4000000, '"') AS p) s`,
  },
  { name: 'to_jsonb of control characters', sql: "SELECT length(to_jsonb(rpad(E'\\x01', 3000000, E'\\x01'))::text)" },
  {
    name: 'jsonb_pretty of deep nesting',
    sql: `SELECT length(jsonb_pretty('${'['.repeat(3000)}${']'.repeat(3000)}'::jsonb))`,
  },
  {
    name: 'a numeric array of huge literals',
    sql: `SELECT length('{${Array.from({ length: 200 }, () => '1e131071').join(',')}}'::numeric[]::text)`,
  },
  { name: 'repeat of a huge numeric', sql: 'SELECT length(repeat((10::numeric ^ 131071)::text, 1000))' },
  {
    name: 'quotes doubled by nested arrays',
    sql: `WITH a AS (SELECT rpad('"', 1000000, '"') AS s), b AS (SELECT ARRAY[s]::text AS s FROM a), c AS (SELECT ARRAY[s]::text AS s FROM b), d AS (SELECT ARRAY[s]::text AS s FROM c) SELECT length(s) FROM d`,
  },
  {
    name: 'quotes doubled by a whole row as text',
    sql: `SELECT length((SELECT t FROM (SELECT rpad('"', 3000000, '"') AS s) t)::text)`,
  },
  {
    name: 'a doubling string in a recursive CTE',
    sql: "WITH RECURSIVE r(s) AS (SELECT 'x'::text UNION ALL SELECT s || s FROM r WHERE length(s) < 1000000000) SELECT length(max(s)) FROM r",
  },
  {
    name: 'a string aggregate over a self-join',
    sql: "SELECT length(string_agg(a.properties::text || b.properties::text, '')) FROM events a JOIN events b ON a.user_id = b.user_id JOIN events c ON b.user_id = c.user_id",
  },
  {
    name: 'huge rows',
    sql: "SELECT (SELECT string_agg(a.properties::text, '') FROM events a JOIN events b ON a.user_id = b.user_id) AS big FROM events",
  },
];
