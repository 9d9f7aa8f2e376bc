// The checker's size pass (issue 25): every function the sandbox allows has a size rule; every
// amplification attack is refused by the checker itself (not by a timeout or by PostgreSQL) on
// both databases; bounded forms of the same functions still pass; and the bounds sit where the
// rules say they do.
import { describe, expect, it } from 'vitest';
import { checkSandboxSql, SandboxRejection } from '../../server/src/sandbox/check.js';
import { ALLOWED_FUNCTIONS, UNBOUNDED_FUNCTIONS } from '../../server/src/sandbox/rules.js';
import { MAX_VALUE_BYTES, SIZE_RULES } from '../../server/src/sandbox/size-rules.js';
import { AMPLIFICATION } from '../security/sandbox-amplification.js';
import { HARMLESS } from '../security/sandbox-attempts.js';

async function verdict(sql: string, embedded = false): Promise<string> {
  try {
    await checkSandboxSql(sql, { embedded });
    return 'allowed';
  } catch (err) {
    if (err instanceof SandboxRejection) return `refused: ${err.message}`;
    throw err;
  }
}

describe('size rules', () => {
  it('has a rule for every function the sandbox allows, and none for others', () => {
    const allowed = [...ALLOWED_FUNCTIONS, ...UNBOUNDED_FUNCTIONS];
    expect(allowed.filter((f) => !SIZE_RULES[f])).toEqual([]);
    expect(Object.keys(SIZE_RULES).filter((f) => !allowed.includes(f))).toEqual([]);
  });
});

describe('amplification attacks', () => {
  it('lists at least 40', () => expect(AMPLIFICATION.length).toBeGreaterThanOrEqual(40));

  it.each(AMPLIFICATION.map((a) => [a.name, a.sql]))('refuses %s on both databases', async (_name, sql) => {
    expect(await verdict(sql, false)).toMatch(/^refused: /);
    expect(await verdict(sql, true)).toMatch(/^refused: /);
  });

  it('says what could grow and how large', async () => {
    expect(await verdict("SELECT lpad('x', 100000000)")).toBe(
      'refused: lpad() could build a value of 381 MB from this input; the sandbox refuses values over 16 MB. Give it smaller input, or counts and lengths written in the query.',
    );
    expect(await verdict("SELECT string_agg(event_name, ',') FROM events")).toMatch(
      /string_agg\(\) over a number of rows the query does not bound could build a value of any size.*subquery with LIMIT/,
    );
    expect(await verdict("SELECT 'x'::char(1001)")).toMatch(/char\(1001\) is not allowed.*up to 1,000/);
  });
});

describe('bounded forms', () => {
  it.each(HARMLESS.filter((a) => !a.refused).map((a) => [a.name, a.sql]))('allows %s', async (_name, sql) => {
    expect(await verdict(sql)).toBe('allowed');
  });

  it.each([
    "SELECT lpad((properties->>'n'), 6, '0') FROM events",
    "SELECT replace(event_name, '_', ' ') FROM events",
    "SELECT concat(event_name, ':', user_id), concat_ws(', ', email, phone) FROM events e JOIN users u USING (user_id)",
    "SELECT 'x'::char(1000), 'y'::varchar(1000)",
    'SELECT array_agg(x) FROM (VALUES (1), (2), (3)) v(x)',
    'SELECT json_agg(t) FROM (SELECT event_name, count(*) AS n FROM events GROUP BY 1 ORDER BY 2 DESC LIMIT 10) t',
    'SELECT ARRAY(SELECT DISTINCT event_name FROM events LIMIT 100)',
    'SELECT to_jsonb(u), row_to_json(e) FROM users u JOIN events e USING (user_id) LIMIT 5',
    "SELECT jsonb_build_object('n', count(*), 'first', min(created_at)) FROM events",
    'SELECT sum((properties->>$$price$$)::numeric), round(avg(event_count), 2) FROM users',
    'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT sum(n) FROM r',
    "SELECT to_char(date_trunc('week', created_at), 'YYYY-MM-DD') AS week, count(*) FROM events GROUP BY 1",
  ])('allows %s', async (sql) => {
    expect(await verdict(sql)).toBe('allowed');
  });

  it('puts the bound at MAX_VALUE_BYTES', async () => {
    // lpad gives exactly n characters, counted at 4 bytes each
    const n = MAX_VALUE_BYTES / 4;
    expect(await verdict(`SELECT lpad('x', ${n})`)).toBe('allowed');
    expect(await verdict(`SELECT lpad('x', ${n + 1})`)).toMatch(/^refused: lpad\(\)/);
    // a subquery with LIMIT bounds an aggregate: 1,000 names of at most 1 KB each
    expect(await verdict("SELECT string_agg(n, ',') FROM (SELECT event_name AS n FROM events LIMIT 1000) t")).toBe(
      'allowed',
    );
    expect(await verdict("SELECT string_agg(n, ',') FROM (SELECT event_name AS n FROM events LIMIT 100000) t")).toMatch(
      /^refused: string_agg\(\) could build a value of 97 MB/,
    );
  });
});
