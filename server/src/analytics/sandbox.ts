// The SQL sandbox: runs one checked SELECT over two relations restricted to one app,
//   events(id, user_id, event_name, properties, created_at)   (bot traffic excluded)
//   users(id, user_id, email, phone, properties, origin, created_at, last_active, event_count)
// (user_id is the external id in both). The caller's statement is wrapped by CTEs of those names
// that read the real tables filtered by the app id, bound as a parameter. It runs in a READ ONLY
// transaction with a statement timeout, under the NOLOGIN role `tally_sandbox` when the database
// lets us switch to it, and with a row cap. Embedded mode (PGlite) enforces no timeout, so there
// the checker refuses unbounded constructs and the planner's cost estimate is checked first.
import type { Knex } from 'knex';
import type pg from 'pg';
import { AppError } from '../errors.js';
import type { ServiceContext } from '../services/context.js';
import { checkSandboxSql, SandboxRejection } from './sandbox-check.js';

export const SANDBOX_ROLE = 'tally_sandbox';
export const DEFAULT_ROW_CAP = 10_000;
/** Above this planner cost, embedded mode refuses to run a query (PGlite does roughly 150,000 cost units a second). */
export const EMBEDDED_MAX_COST = 500_000;

export interface SandboxOptions {
  timeoutMs: number;
  rowCap?: number;
}

export interface SandboxResult {
  rows: Record<string, unknown>[];
  truncated: boolean;
  /** The statement that was checked and run (the caller's SELECT, inside the sandbox's CTEs). */
  sql: string;
  /** Column names, in order (also for an empty result). */
  columns: string[];
}

export class QueryRejectedError extends AppError {
  constructor(message: string) {
    super(400, 'QUERY_REJECTED', message);
  }
}

export class QueryTimeoutError extends AppError {
  constructor(timeoutMs: number) {
    super(
      400,
      'QUERY_TIMEOUT',
      `The query ran longer than ${timeoutMs} ms and was cancelled. Narrow it down (a shorter time range, fewer joins) and try again.`,
    );
  }
}

const EVENTS_CTE = `events AS NOT MATERIALIZED (
  SELECT e.id, u.external_id AS user_id, e.event_name, e.properties, e.created_at
  FROM public.events e LEFT JOIN public.users u ON u.id = e.user_id
  WHERE e.app_id = $1::uuid AND NOT e.is_bot
)`;
const USERS_CTE = `users AS NOT MATERIALIZED (
  SELECT id, external_id AS user_id, email, phone, properties, origin, created_at, last_active, event_count
  FROM public.users WHERE app_id = $1::uuid
)`;

const isEmbedded = (db: Knex) => db.client.constructor.name === 'PgliteDialect';

/**
 * Checks and runs caller- or LLM-written SQL for one app. Throws QUERY_REJECTED (400) for a
 * statement the sandbox refuses and QUERY_TIMEOUT (400) when it runs out of time.
 */
export async function runSandboxedQuery(
  ctx: Pick<ServiceContext, 'db' | 'logger'>,
  appId: string,
  sql: string,
  options: SandboxOptions,
): Promise<SandboxResult> {
  const embedded = isEmbedded(ctx.db);
  let statement: string;
  try {
    statement = await checkSandboxSql(sql, { embedded });
  } catch (err) {
    if (err instanceof SandboxRejection) throw new QueryRejectedError(err.message);
    throw err;
  }
  return runOverRelations(ctx, appId, statement, [], options);
}

/**
 * Runs trusted SQL (written by Tally itself, e.g. compiled from natural language) over the same
 * relations, with the same limits. `$1` is the app id; the statement's own parameters start at $2.
 */
export async function runOverRelations(
  ctx: Pick<ServiceContext, 'db' | 'logger'>,
  appId: string,
  statement: string,
  params: unknown[],
  options: SandboxOptions,
): Promise<SandboxResult> {
  const embedded = isEmbedded(ctx.db);
  const rowCap = options.rowCap ?? DEFAULT_ROW_CAP;
  // The caller's statement becomes a subquery under our WITH (PostgreSQL keeps its order); the
  // newline ends any trailing line comment, and the outer LIMIT fetches one row past the cap.
  const text = `WITH ${EVENTS_CTE},\n${USERS_CTE}\nSELECT * FROM (\n${statement}\n) AS sandbox_result LIMIT ${rowCap + 1}`;
  const values = [appId, ...params];
  const conn = (await ctx.db.client.acquireConnection()) as pg.Client;
  let open = false;
  try {
    if (embedded) await refreshStatistics(ctx.db, conn);
    await conn.query('BEGIN TRANSACTION READ ONLY');
    open = true;
    await conn.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(options.timeoutMs))}`);
    if (await sandboxRoleUsable(ctx.db, conn)) await conn.query(`SET LOCAL ROLE ${SANDBOX_ROLE}`);
    if (embedded) {
      const plan = await conn.query({ text: `EXPLAIN (FORMAT JSON) ${text}`, values });
      const plans = plan.rows[0]?.['QUERY PLAN'] as { Plan?: { 'Total Cost'?: number } }[] | undefined;
      const cost = Number(plans?.[0]?.Plan?.['Total Cost']);
      if (!(cost <= EMBEDDED_MAX_COST)) {
        throw new QueryRejectedError(
          `The query is too expensive for embedded mode (planner cost ${Math.round(cost)}, limit ${EMBEDDED_MAX_COST}). Filter it further (a time range, an event name) or run Tally on PostgreSQL.`,
        );
      }
    }
    const result = await conn.query({ text, values, rowMode: 'array' });
    await conn.query('COMMIT');
    open = false;
    const columns = uniqueNames(result.fields.map((f) => f.name));
    const all = result.rows as unknown[][];
    const truncated = all.length > rowCap;
    const convert = result.fields.map((f) => converter(f.dataTypeID));
    const rows = (truncated ? all.slice(0, rowCap) : all).map((r) =>
      Object.fromEntries(columns.map((c, i) => [c, r[i] === null ? null : convert[i]!(r[i])])),
    );
    return { rows, truncated, sql: statement, columns };
  } catch (err) {
    if (open) await conn.query('ROLLBACK').catch(() => undefined);
    throw translate(err, options.timeoutMs);
  } finally {
    await ctx.db.client.releaseConnection(conn);
  }
}

function translate(err: unknown, timeoutMs: number): unknown {
  if (err instanceof AppError) return err;
  const e = err as { code?: string; message?: string };
  if (e?.code === '57014') return new QueryTimeoutError(timeoutMs);
  // Errors PostgreSQL raises for the statement itself (syntax, unknown column, bad cast, read-only,
  // permission): the caller's query is at fault, and the message helps them fix it.
  if (typeof e?.code === 'string' && /^(22|42|25|0A|2B|21|23|44|53|54)/.test(e.code)) {
    return new QueryRejectedError(`PostgreSQL refused the query: ${e.message}.`);
  }
  return err;
}

const analyzedAt = new WeakMap<Knex, number>();
const ANALYZE_EVERY_MS = 10 * 60_000;

/**
 * PGlite runs no autovacuum, so without this the planner's estimates (and the cost check) would
 * rest on no statistics at all. Refreshed at most every ten minutes.
 */
async function refreshStatistics(db: Knex, conn: pg.Client): Promise<void> {
  const last = analyzedAt.get(db);
  if (last !== undefined && Date.now() - last < ANALYZE_EVERY_MS) return;
  await conn.query('ANALYZE public.events, public.users');
  analyzedAt.set(db, Date.now());
}

const roleUsable = new WeakMap<Knex, boolean>();

/** Whether `SET ROLE tally_sandbox` works on this database (migration 004 creates it when it can). */
async function sandboxRoleUsable(db: Knex, conn: pg.Client): Promise<boolean> {
  const known = roleUsable.get(db);
  if (known !== undefined) return known;
  let usable = false;
  await conn.query('SAVEPOINT sandbox_role_probe');
  try {
    await conn.query(`SET LOCAL ROLE ${SANDBOX_ROLE}`);
    await conn.query('SELECT 1 FROM public.events WHERE false');
    usable = true;
  } catch {
    usable = false;
  }
  await conn.query('ROLLBACK TO SAVEPOINT sandbox_role_probe');
  roleUsable.set(db, usable);
  return usable;
}

function uniqueNames(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((n) => {
    const count = (seen.get(n) ?? 0) + 1;
    seen.set(n, count);
    return count === 1 ? n : `${n}_${count}`;
  });
}

// Result values as JSON-friendly types: numbers for int8/numeric when they fit, dates as text.
// (pg's per-query `types` option hangs on the embedded driver, so values are converted here.)
const INT8 = 20;
const NUMERIC = 1700;
const DATE = 1082;
const TIMESTAMP = 1114;

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const localDateText = (d: Date) => `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;

function toNumber(v: string): number | string {
  const n = Number(v);
  return Number.isFinite(n) && (Number.isSafeInteger(n) || !/^-?\d+$/.test(v)) ? n : v;
}

function converter(oid: number): (v: unknown) => unknown {
  if (oid === INT8 || oid === NUMERIC) return (v) => (typeof v === 'string' ? toNumber(v) : v);
  // pg parses date and timestamp (without zone) in the process's local time: read them back so.
  if (oid === DATE) return (v) => (v instanceof Date && !Number.isNaN(v.getTime()) ? localDateText(v) : v);
  if (oid === TIMESTAMP) {
    return (v) =>
      v instanceof Date && !Number.isNaN(v.getTime())
        ? `${localDateText(v)}T${pad(v.getHours())}:${pad(v.getMinutes())}:${pad(v.getSeconds())}${v.getMilliseconds() ? `.${pad(v.getMilliseconds(), 3)}` : ''}`
        : v;
  }
  return (v) => v;
}
