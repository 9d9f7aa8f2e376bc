// The first layer of the SQL sandbox: a checker over the real PostgreSQL parse tree (libpg-query).
// It is an allow-list twice over: every node type must be one this file knows, and every field of
// a node that holds a subtree must be one this file walks, so nothing the parser produces is
// skipped. Every way of reaching a function is resolved against the function allow-list: calls,
// field selection (`x.f` and `(expr).f` are calls of f(x) unless f is a known column), operators
// (allow-listed by name) and casts (allow-listed types, whose input functions are harmless). The
// statement that runs is printed back from the checked tree (pgsql-deparser), re-parsed and compared
// with it, so the text PostgreSQL executes is exactly the tree that was checked.
// Embedded mode (PGlite) also refuses what only a statement timeout could bound: recursive CTEs,
// generate_series, regular expressions, and joins without an equality between columns.
//
// This file is the entry point; the walk is in check-select.ts (SELECT, FROM, scopes) and
// check-expr.ts (expressions), the parse-tree helpers in check-tree.ts, the size pass in size.ts.
import { parse } from 'libpg-query';
import { deparseSync } from 'pgsql-deparser';
import { Checker } from './check-select.js';
import { type CheckOptions, describeStatement, isObject, type Json, reject } from './check-tree.js';
import { ALLOWED_FUNCTIONS, SANDBOX_RELATIONS, UNBOUNDED_FUNCTIONS } from './rules.js';
import { checkValueSizes } from './size.js';

export { type CheckOptions, SandboxRejection } from './check-tree.js';
export { ALLOWED_FUNCTIONS, SANDBOX_RELATIONS, UNBOUNDED_FUNCTIONS };

/**
 * Parses `sql` and checks it. Returns the statement to run, printed from the checked tree.
 * Throws SandboxRejection with a reason written for the caller.
 */
export async function checkSandboxSql(sql: string, options: CheckOptions): Promise<string> {
  const stmt = await parseOne(sql);
  new Checker(options).statement(stmt);
  checkValueSizes(stmt, reject);
  let printed: string;
  try {
    printed = deparseSync(stmt, { pretty: false });
  } catch {
    return reject('The query uses syntax the sandbox cannot print back safely; simplify it.');
  }
  // What runs must be exactly what was checked: the printed text parses to the same tree.
  const reparsed = await parseOne(printed).catch(() => null);
  if (!reparsed || JSON.stringify(withoutLocations(reparsed)) !== JSON.stringify(withoutLocations(stmt))) {
    return reject('The query uses syntax the sandbox cannot print back safely; simplify it.');
  }
  return printed;
}

async function parseOne(sql: string): Promise<Json> {
  let parsed: Awaited<ReturnType<typeof parse>>;
  try {
    parsed = await parse(sql);
  } catch (err) {
    return reject(`The SQL does not parse: ${(err as Error).message}.`);
  }
  const stmts = parsed.stmts ?? [];
  if (stmts.length === 0) return reject('The query is empty.');
  if (stmts.length > 1) return reject('Send one statement only; this query has several.');
  const stmt = (stmts[0] as { stmt: Json }).stmt;
  const kind = Object.keys(stmt)[0]!;
  if (kind !== 'SelectStmt') return reject(`Only SELECT queries are allowed; this is ${describeStatement(kind)}.`);
  return stmt;
}

function withoutLocations(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutLocations);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const key of Object.keys(value).sort()) {
    if (/location$|list_(start|end)$|^stmt_len$/.test(key)) continue;
    out[key] = withoutLocations(value[key]);
  }
  return out;
}
