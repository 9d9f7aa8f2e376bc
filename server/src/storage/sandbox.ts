// Executes SQL over the sandbox relations for one app: the caller's checked SELECT, or SQL Tally
// wrote itself (natural language, audiences). The statement becomes a subquery under CTEs named
// `events` and `users` that read the real tables filtered by the app id ($1), and runs as exactly
// one statement through the extended protocol (a cursor), so nothing can be appended to it. Rows
// are read in batches up to a row cap and a byte cap (the transport is cut when one batch alone
// is far over it); a capped result is marked truncated.
//  - PostgreSQL: its own small pool, logged in as the confined sandbox role (sandbox-role.ts), in a
//    READ ONLY transaction with a statement timeout, transaction-local settings and a connection
//    reset (DISCARD ALL) after each query.
//  - Embedded (PGlite, a superuser session in the worker thread): one sandbox query at a time, in
//    its own queue, so other requests wait for at most the one running; a query over its time cap
//    stops the worker, which restarts on the same data.

import type { Knex } from 'knex';
import pg from 'pg';
import Cursor from 'pg-cursor';
import type { Logger } from 'pino';
import type { EmbeddedHost } from './embedded/host.js';
import { TimeCapExceeded } from './embedded/host.js';
import { APP_SETTING, type Confinement, checkConfinement, ensureSandboxSetup } from './sandbox-role.js';

export interface SandboxStatement {
  appId: string;
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

export class SandboxTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`sandbox query ran over ${timeoutMs} ms`);
  }
}

export class SandboxUnavailable extends Error {
  constructor(readonly problems: string[]) {
    super(`the SQL sandbox is not confined: ${problems.join('; ')}`);
  }
}

export interface SandboxDatabase {
  readonly embedded: boolean;
  run(q: SandboxStatement): Promise<SandboxRows>;
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
 */
const PLAN_FOR_ALL_ROWS = 'SET LOCAL cursor_tuple_fraction = 1.0; SET LOCAL enable_nestloop = off';
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
async function readCapped(
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

function appSettingStatement(appId: string): string {
  if (!UUID.test(appId)) throw new Error('app id is not a UUID');
  return `SET LOCAL ${APP_SETTING} = '${appId}'`;
}

/** PostgreSQL: a pool logged in as the sandbox role, checked for confinement before use. */
class PostgresSandbox implements SandboxDatabase {
  readonly embedded = false;
  private pool: pg.Pool | null = null;
  private checked: { at: number; confinement: Confinement } | null = null;
  private opening: Promise<Confinement> | null = null;

  constructor(
    private readonly knex: Knex,
    private readonly databaseUrl: string,
    private readonly sandboxUrl: string | undefined,
    private readonly logger: Logger | undefined,
  ) {}

  /** Sets the role up (as far as Tally's role may), opens the pool and checks confinement. */
  confinement(): Promise<Confinement> {
    // An unconfined setup is checked again after a minute: an operator may have fixed it.
    if (this.checked && (this.checked.confinement.confined || Date.now() - this.checked.at < 60_000)) {
      return Promise.resolve(this.checked.confinement);
    }
    this.opening ??= this.open().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  private async open(): Promise<Confinement> {
    let confinement: Confinement;
    try {
      const { role, password } = await ensureSandboxSetup(this.knex);
      if (!this.pool) {
        const url = new URL(this.sandboxUrl ?? this.databaseUrl);
        if (!this.sandboxUrl) {
          url.username = role;
          url.password = password ?? '';
        }
        this.pool = new pg.Pool({ connectionString: url.toString(), max: 5, idleTimeoutMillis: 30_000 });
        this.pool.on('error', (err) => this.logger?.warn({ err: err.message }, 'sandbox connection failed'));
      }
      const client = await this.pool.connect();
      try {
        confinement = await checkConfinement(client);
      } finally {
        client.release();
      }
    } catch (err) {
      confinement = { confined: false, problems: [`the sandbox role cannot log in (${(err as Error).message})`] };
    }
    if (!confinement.confined) {
      this.logger?.error(
        { problems: confinement.problems },
        'The SQL sandbox is not confined on this database, so SQL from callers is refused. Run `npx tally sandbox-sql` and have a superuser run what it prints (docs/security.md).',
      );
    }
    this.checked = { at: Date.now(), confinement };
    return confinement;
  }

  async run(q: SandboxStatement): Promise<SandboxRows> {
    const { confined, problems } = await this.confinement();
    if (!confined) {
      if (!q.trusted) throw new SandboxUnavailable(problems);
      return this.runTrustedOnMainPool(q);
    }
    const client = await this.pool!.connect();
    // A connection cut under an oversized result reports it as an error event: it is handled here.
    const onError = (err: Error) => this.logger?.debug({ err: err.message }, 'sandbox connection closed');
    client.on('error', onError);
    let broken = true;
    try {
      await client.query('BEGIN TRANSACTION READ ONLY');
      await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(q.timeoutMs))}`);
      await client.query('SET LOCAL search_path = pg_catalog');
      await client.query(PLAN_FOR_ALL_ROWS);
      await client.query(appSettingStatement(q.appId));
      const result = await readCapped(client, wrapStatement(q.statement), [q.appId, ...q.params], q.rowCap, q.byteCap);
      if (!result.broken) {
        await client.query('ROLLBACK');
        await client.query('DISCARD ALL');
        broken = false;
      }
      return result;
    } catch (err) {
      if ((err as { code?: string }).code === '57014') throw new SandboxTimeout(q.timeoutMs);
      throw err;
    } finally {
      // A connection that failed in any way is closed rather than reused.
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  /** Tally's own SQL when the sandbox role is not set up: the main pool, read only, same caps. */
  private async runTrustedOnMainPool(q: SandboxStatement): Promise<SandboxRows> {
    const client = (await this.knex.client.acquireConnection()) as pg.Client;
    try {
      await client.query('BEGIN TRANSACTION READ ONLY');
      await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(q.timeoutMs))}`);
      await client.query(PLAN_FOR_ALL_ROWS);
      const result = await readCapped(client, wrapStatement(q.statement), [q.appId, ...q.params], q.rowCap, q.byteCap);
      if (!result.broken) await client.query('ROLLBACK');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      if ((err as { code?: string }).code === '57014') throw new SandboxTimeout(q.timeoutMs);
      throw err;
    } finally {
      await this.knex.client.releaseConnection(client);
    }
  }

  async close(): Promise<void> {
    await this.pool?.end();
    this.pool = null;
  }
}

/** Above this planner cost, embedded mode refuses a query before running it (PGlite does roughly 150,000 cost units a second). */
export const EMBEDDED_MAX_COST = 500_000;

export class QueryTooExpensive extends Error {
  constructor(readonly cost: number) {
    super(`planner cost ${cost} over ${EMBEDDED_MAX_COST}`);
  }
}

/** Embedded: one sandbox query at a time, time-capped by restarting the worker. */
class EmbeddedSandbox implements SandboxDatabase {
  readonly embedded = true;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly knex: Knex,
    private readonly host: EmbeddedHost,
  ) {}

  async confinement(): Promise<Confinement> {
    return { confined: false, problems: ['embedded mode has no database roles; only the checker and the caps apply'] };
  }

  run(q: SandboxStatement): Promise<SandboxRows> {
    const turn = this.tail.then(() => this.runNow(q));
    this.tail = turn.catch(() => undefined);
    return turn;
  }

  /**
   * Lets the rest of the service go first: a request makes several queries one after another, and
   * a sandbox query taking the one connection between two of them would hold the request up for a
   * whole sandbox query. So each sandbox query waits until the connection has been free of other
   * work for a moment (never more than two seconds, so sandbox queries cannot be starved).
   */
  private async yieldToOtherWork(): Promise<void> {
    const pool = (this.knex.client as unknown as { pool?: { numPendingAcquires(): number; numUsed(): number } }).pool;
    if (!pool) return;
    const deadline = Date.now() + 2_000;
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      if (pool.numPendingAcquires() > 0 || pool.numUsed() > 0) quietSince = Date.now();
      else if (Date.now() - quietSince >= 50) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  private async runNow(q: SandboxStatement): Promise<SandboxRows> {
    await this.yieldToOtherWork();
    const client = (await this.knex.client.acquireConnection()) as pg.Client;
    let open = false;
    try {
      const text = wrapStatement(q.statement);
      const values = [q.appId, ...q.params];
      const result = await this.host.withTimeCap(q.timeoutMs, async () => {
        await client.query('BEGIN TRANSACTION READ ONLY');
        open = true;
        await client.query(PLAN_FOR_ALL_ROWS);
        const plan = await client.query({ text: `EXPLAIN (FORMAT JSON) ${text}`, values });
        const cost = Number(
          (plan.rows[0]?.['QUERY PLAN'] as { Plan?: { 'Total Cost'?: number } }[])?.[0]?.Plan?.['Total Cost'],
        );
        if (!(cost <= EMBEDDED_MAX_COST)) throw new QueryTooExpensive(Math.round(cost));
        const result = await readCapped(client, text, values, q.rowCap, q.byteCap);
        if (!result.broken) {
          await client.query('ROLLBACK');
          open = false;
          await client.query('RESET ALL');
        }
        return result;
      });
      // The connection was cut under a result far over the byte cap, but the worker is still
      // producing it and cannot be interrupted: start it afresh.
      if (result.broken) await this.host.restart('a sandbox result ran far over its byte cap');
      return result;
    } catch (err) {
      if (err instanceof TimeCapExceeded) throw new SandboxTimeout(q.timeoutMs);
      if (open) await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      await this.knex.client.releaseConnection(client);
    }
  }

  async close(): Promise<void> {}
}

export function postgresSandbox(
  knex: Knex,
  databaseUrl: string,
  sandboxUrl: string | undefined,
  logger?: Logger,
): SandboxDatabase {
  return new PostgresSandbox(knex, databaseUrl, sandboxUrl, logger);
}

export function embeddedSandbox(knex: Knex, host: EmbeddedHost): SandboxDatabase {
  return new EmbeddedSandbox(knex, host);
}
