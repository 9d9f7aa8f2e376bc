// Executes SQL over the sandbox relations for one app: the caller's checked SELECT, or SQL Tally
// wrote itself (natural language, audiences). The statement becomes a subquery under CTEs named
// `events` and `users` that read the real tables filtered by the app id ($1), and runs as exactly
// one statement through the extended protocol (a cursor), so nothing can be appended to it. Rows
// are read in batches up to a row cap and a byte cap (the transport is cut when one batch alone
// is far over it); a capped result is marked truncated.
//  - PostgreSQL (postgres.ts): its own small pool, logged in as the confined sandbox role
//    (role.ts), in a READ ONLY transaction with a statement timeout backed by cancelling and
//    then terminating the backend, transaction-local settings and a connection reset after each query.
//  - Embedded (embedded.ts; PGlite, a superuser session in the worker thread): one sandbox
//    query at a time, in its own queue, refused first when its plan is too expensive; a query over
//    its time cap stops the worker, which restarts on the same data.
// This module holds what both share: the statement's wrapping and the capped reading of its rows.

import type pg from 'pg';
import Cursor from 'pg-cursor';
import type { PoolUse } from '../../metrics.js';
import { APP_SETTING, type Confinement } from './role.js';

export interface SandboxStatement {
  appId: string;
  /** The app's organization: sandbox backends are labelled with it (application_name). */
  organizationId: string;
  /** SQL over `events` and `users`; `$1` is the app id, the statement's own parameters start at $2. */
  statement: string;
  params: unknown[];
  /** Written by Tally (may run outside the confined role when that is not set up). */
  trusted: boolean;
  timeoutMs: number;
  rowCap: number;
  byteCap: number;
}

export interface SandboxRows {
  fields: { name: string; dataTypeID: number }[];
  rows: unknown[][];
  truncated: boolean;
}

export class SandboxUnavailable extends Error {
  constructor(readonly problems: string[]) {
    super(`the SQL sandbox is not confined: ${problems.join('; ')}`);
  }
}

export interface SandboxDatabase {
  readonly embedded: boolean;
  /** How many sandbox queries can run at once (connections of the sandbox pool). */
  readonly slots: number;
  /** Queries stopped by force: backends terminated past their timeout, or restarts at the time cap. */
  readonly stoppedByForce: number;
  run(q: SandboxStatement): Promise<SandboxRows>;
  /** How busy the sandbox's own connection pool is (PostgreSQL, once opened); null otherwise. */
  poolUse(): PoolUse | null;
  /** The confinement of the PostgreSQL sandbox role (always confined:false in embedded mode). */
  confinement(): Promise<Confinement>;
  close(): Promise<void>;
}

const EVENTS_CTE = `events AS NOT MATERIALIZED (
  SELECT e.id, u.external_id AS user_id, e.event_name, e.properties, e.created_at
  FROM public.events e LEFT JOIN public.users u ON u.app_id = e.app_id AND u.id = e.user_id
  WHERE e.app_id = $1::uuid AND NOT e.is_bot
)`;
const USERS_CTE = `users AS NOT MATERIALIZED (
  SELECT id, external_id AS user_id, email, phone, properties, origin, created_at, last_active, event_count
  FROM public.users WHERE app_id = $1::uuid
)`;

/** The statement as it runs: under the relation CTEs (the newline ends any trailing comment). */
export const wrapStatement = (statement: string) =>
  `WITH ${EVENTS_CTE},\n${USERS_CTE}\nSELECT * FROM (\n${statement}\n) AS sandbox_result`;

const BATCH_ROWS = 500;
/**
 * Results are read through a cursor, for which PostgreSQL plans to return the first 10 % of rows
 * fast (cursor_tuple_fraction): a plan that can be far slower in total for aggregates. We read
 * every row up to the caps, so plan for all of them. Analytics over events rarely gains from
 * nested-loop joins, and a nested loop chosen on stale statistics (the embedded database has no
 * autovacuum) can take minutes where a hash join takes milliseconds: they are a last resort.
 * No JIT compilation: on PostgreSQL 15 a plan these settings disable keeps a large penalty in its
 * cost, so a query that can only run as a nested loop (a lateral subquery) asks for JIT with
 * inlining and optimization: 337 ms of compiling for a query of 84 ms, seen at a million events.
 * Questions are meant to answer in well under a second; JIT pays off only for far longer ones.
 */
export const PLAN_FOR_ALL_ROWS =
  'SET LOCAL cursor_tuple_fraction = 1.0; SET LOCAL enable_nestloop = off; SET LOCAL jit = off';
/**
 * A sandbox query runs in its own backend only, without parallel workers: an organization's share
 * of the sandbox (two connections on PostgreSQL) is then also its share of the database's processes.
 */
export const NO_PARALLEL_WORKERS = 'SET LOCAL max_parallel_workers_per_gather = 0';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A rough size of a row as JSON, to stop reading past the byte cap. */
function rowBytes(row: unknown[]): number {
  let n = 2;
  for (const v of row) {
    if (v === null || v === undefined) n += 5;
    else if (typeof v === 'string') n += v.length + 3;
    else if (typeof v === 'number' || typeof v === 'boolean') n += 8;
    else if (v instanceof Date) n += 26;
    else if (Buffer.isBuffer(v)) n += v.length * 2;
    else n += JSON.stringify(v)?.length ?? 4;
  }
  return n;
}

type CursorWithResult = Cursor & { _result: { fields: { name: string; dataTypeID: number }[] } };

/**
 * Reads a cursor over `text` up to the caps. Also cuts the connection if the bytes arriving for
 * this query run far past the byte cap (one batch of huge rows); the connection is then unusable
 * and `broken` is set.
 */
export async function readCapped(
  client: pg.ClientBase,
  text: string,
  values: unknown[],
  rowCap: number,
  byteCap: number,
): Promise<SandboxRows & { broken: boolean }> {
  const stream = (client as unknown as { connection: { stream: NodeJS.ReadableStream & { destroy(e?: Error): void } } })
    .connection.stream;
  const transportCap = 2 * byteCap + 1024 * 1024;
  let arrived = 0;
  let cut = false;
  const onData = (chunk: Buffer) => {
    arrived += chunk.length;
    if (arrived > transportCap && !cut) {
      cut = true;
      stream.destroy(new Error('sandbox result over the transport cap'));
    }
  };
  stream.on('data', onData);
  const cursor = client.query(new Cursor(text, values, { rowMode: 'array' })) as CursorWithResult;
  const rows: unknown[][] = [];
  let bytes = 0;
  let truncated = false;
  try {
    for (;;) {
      const batch = (await cursor.read(Math.min(BATCH_ROWS, rowCap + 1 - rows.length))) as unknown[][];
      if (batch.length === 0) break;
      for (const row of batch) {
        bytes += rowBytes(row);
        if (rows.length >= rowCap || bytes > byteCap) {
          truncated = true;
          break;
        }
        rows.push(row);
      }
      if (truncated) break;
    }
  } catch (err) {
    if (!cut) throw err;
    truncated = true;
  } finally {
    stream.removeListener('data', onData);
  }
  if (!cut) await cursor.close();
  return { fields: cursor._result.fields ?? [], rows, truncated, broken: cut };
}

export function appSettingStatement(appId: string): string {
  if (!UUID.test(appId)) throw new Error('app id is not a UUID');
  return `SET LOCAL ${APP_SETTING} = '${appId}'`;
}

/** `application_name` of a sandbox backend running a query for an organization. */
export function sandboxApplicationName(organizationId: string): string {
  return `tally-sandbox:${UUID.test(organizationId) ? organizationId : 'unknown'}`;
}

/** Above this planner cost, embedded mode refuses a query before running it (PGlite does roughly 150,000 cost units a second). */
export const EMBEDDED_MAX_COST = 500_000;

export class QueryTooExpensive extends Error {
  constructor(
    readonly cost: number,
    /** Set when the plan's joins, estimated with the app's own key frequencies, make too many rows. */
    readonly joinRows?: number,
  ) {
    super(joinRows === undefined ? `planner cost ${cost} over ${EMBEDDED_MAX_COST}` : `joins making ${joinRows} rows`);
  }
}
