// The SQL sandbox: runs one SELECT over two relations restricted to one app,
//   events(id, user_id, event_name, properties, created_at)   (bot traffic excluded)
//   users(id, user_id, email, phone, properties, origin, created_at, last_active, event_count)
// (user_id is the external id in both). Its layers, each meant to hold on its own
// (docs/security.md): (1) the checker (sandbox/check.ts), whose printed tree is what runs;
// (2) on PostgreSQL, the confined database role (sandbox/queries/role.ts, sandbox/queries/executor.ts);
// (3) resources: admission per key and per organization, and in embedded mode a cool-down after a
// query ran into the time cap (sandbox/admission.ts); a statement timeout (PostgreSQL, backed by
// cancelling and terminating the backend) or a time cap that restarts the embedded worker; and
// caps on rows and bytes.

import type { ServiceContext } from '../context.js';
import { AppError, isStatementTimeout, QueryTimeoutError, RateLimitError, STATUS_OF } from '../errors.js';
import { findApp } from '../storage/tenancy.js';
import { checkSandboxSql, SandboxRejection } from './check.js';
import { EMBEDDED_MAX_JOIN_ROWS } from './queries/embedded.js';
import { EMBEDDED_MAX_COST, QueryTooExpensive, SandboxUnavailable } from './queries/executor.js';

export const DEFAULT_ROW_CAP = 10_000;
export const DEFAULT_BYTE_CAP = 4 * 1024 * 1024;

export interface SandboxOptions {
  timeoutMs: number;
  rowCap?: number;
  byteCap?: number;
  /** Whose concurrency this query counts against (the API key's id); the app id when absent. */
  owner?: string;
  /** The app's organization (looked up when absent): its share of the sandbox and its cool-down. */
  organizationId?: string;
}

export interface SandboxResult {
  rows: Record<string, unknown>[];
  truncated: boolean;
  /** The statement that was checked and run. */
  sql: string;
  /** Column names, in order (also for an empty result). */
  columns: string[];
}

type SandboxContext = Pick<ServiceContext, 'sandbox' | 'logger'> &
  Partial<Pick<ServiceContext, 'config' | 'db' | 'clock' | 'metrics'>>;

async function organizationOf(ctx: SandboxContext, appId: string, given: string | undefined): Promise<string> {
  if (given) return given;
  const app = ctx.db ? await findApp(ctx.db, appId) : undefined;
  return app?.organization_id ?? appId;
}

export class QueryRejectedError extends AppError<'QUERY_REJECTED'> {
  constructor(message: string) {
    super(STATUS_OF.QUERY_REJECTED, 'QUERY_REJECTED', message);
  }
}

let checkerOff = false;

/**
 * Test code only: turns the checker off, to prove what the database layer alone allows. There is
 * no environment variable or setting for this, and it refuses to work outside tests.
 */
export function disableSandboxCheckerForTests(off: boolean): void {
  if (process.env.NODE_ENV !== 'test' || !process.env.VITEST) {
    throw new Error('The sandbox checker can only be switched off by the test suite.');
  }
  checkerOff = off;
}

/**
 * Checks and runs caller- or LLM-written SQL for one app. Throws QUERY_REJECTED (400) for a
 * statement the sandbox refuses and QUERY_TIMEOUT (400) when it runs out of time.
 */
export async function runSandboxedQuery(
  ctx: SandboxContext,
  appId: string,
  sql: string,
  options: SandboxOptions,
): Promise<SandboxResult> {
  const organizationId = await organizationOf(ctx, appId, options.organizationId);
  let statement = sql;
  if (!checkerOff) {
    try {
      statement = await checkSandboxSql(sql, { embedded: ctx.sandbox.executor.embedded });
    } catch (err) {
      if (!(err instanceof SandboxRejection)) throw err;
      const rejected = new QueryRejectedError(err.message);
      ctx.metrics?.sandboxQueries.inc({ organization_id: organizationId, source: 'caller' });
      countFailure(ctx, organizationId, rejected);
      throw rejected;
    }
  }
  return execute(ctx, appId, statement, [], { ...options, organizationId }, false);
}

/**
 * Runs SQL Tally wrote itself (compiled from natural language, audiences) over the same relations,
 * with the same limits. `$1` is the app id; the statement's own parameters start at $2.
 */
export function runOverRelations(
  ctx: SandboxContext,
  appId: string,
  statement: string,
  params: unknown[],
  options: SandboxOptions,
): Promise<SandboxResult> {
  return execute(ctx, appId, statement, params, options, true);
}

async function execute(
  ctx: SandboxContext,
  appId: string,
  statement: string,
  params: unknown[],
  options: SandboxOptions,
  trusted: boolean,
): Promise<SandboxResult> {
  const rowCap = options.rowCap ?? DEFAULT_ROW_CAP;
  const { executor, admission } = ctx.sandbox;
  const timeoutMs = executor.embedded
    ? Math.min(options.timeoutMs, ctx.config?.embeddedQueryTimeoutMs ?? options.timeoutMs)
    : options.timeoutMs;
  const organizationId = await organizationOf(ctx, appId, options.organizationId);
  // Direct callers without a service clock (tests of the executor) read the system's.
  const now = () => (ctx.clock ? ctx.clock() : new Date()).getTime();
  const admitted = { key: options.owner ?? appId, organization: organizationId, timeoutMs, now };
  ctx.metrics?.sandboxQueries.inc({ organization_id: organizationId, source: trusted ? 'tally' : 'caller' });
  const result = await admission
    .run(admitted, async () => {
      try {
        return await executor.run({
          appId,
          organizationId,
          statement,
          params,
          trusted,
          timeoutMs,
          rowCap,
          byteCap: options.byteCap ?? DEFAULT_BYTE_CAP,
        });
      } catch (err) {
        if (err instanceof QueryTimeoutError && executor.embedded) {
          const ms = admission.capHit(organizationId, now());
          ctx.logger?.warn(
            { organization_id: organizationId, app_id: appId, cooldown_ms: ms },
            'a sandbox query ran into the embedded time cap; its organization is cooled down',
          );
        }
        throw translate(err, timeoutMs);
      }
    })
    .catch((err: unknown) => {
      countFailure(ctx, organizationId, err);
      throw err;
    });
  const columns = uniqueNames(result.fields.map((f) => f.name));
  const convert = result.fields.map((f) => converter(f.dataTypeID));
  const rows = result.rows.map((r) =>
    Object.fromEntries(columns.map((c, i) => [c, r[i] === null ? null : convert[i]!(r[i])])),
  );
  return { rows, truncated: result.truncated, sql: statement, columns };
}

/** Counts a refused query (by reason) or one stopped at its time limit. */
function countFailure(ctx: SandboxContext, organizationId: string, err: unknown): void {
  const metrics = ctx.metrics;
  if (!metrics) return;
  if (err instanceof QueryTimeoutError) metrics.sandboxTimeCapHits.inc({ organization_id: organizationId });
  else if (err instanceof QueryRejectedError)
    metrics.sandboxRefusals.inc({ organization_id: organizationId, reason: 'rejected' });
  else if (err instanceof RateLimitError) {
    const reason = String(err.details?.reason ?? 'admission');
    metrics.sandboxRefusals.inc({ organization_id: organizationId, reason });
  }
}

function translate(err: unknown, timeoutMs: number): unknown {
  if (err instanceof AppError) return err;
  if (err instanceof QueryTooExpensive && err.joinRows !== undefined) {
    return new QueryRejectedError(
      `The query's joins could pair about ${err.joinRows.toLocaleString('en')} rows of this app, more than embedded mode runs (${EMBEDDED_MAX_JOIN_ROWS.toLocaleString('en')}): joining events on an event name or a user pairs every matching event with every other. Filter both sides (a time range, an event name), join on an id, or run Tally on PostgreSQL.`,
    );
  }
  if (err instanceof QueryTooExpensive) {
    return new QueryRejectedError(
      `The query is too expensive for embedded mode (planner cost ${err.cost}, limit ${EMBEDDED_MAX_COST}). Filter it further (a time range, an event name) or run Tally on PostgreSQL.`,
    );
  }
  if (err instanceof SandboxUnavailable) {
    return new AppError(
      503,
      'SERVICE_UNAVAILABLE',
      'SQL queries are switched off on this server until its operator sets up the SQL sandbox (docs/security.md). Questions in plain words still work.',
    );
  }
  const e = err as { code?: string; message?: string };
  if (isStatementTimeout(err)) return new QueryTimeoutError(timeoutMs);
  // Errors PostgreSQL raises for the statement itself (syntax, unknown column, bad cast, read-only,
  // permission): the caller's query is at fault, and the message helps them fix it.
  if (typeof e?.code === 'string' && /^(22|42|25|0A|2B|21|23|44|53|54)/.test(e.code)) {
    return new QueryRejectedError(`PostgreSQL refused the query: ${e.message}.`);
  }
  return err;
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
