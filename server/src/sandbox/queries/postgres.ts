// The sandbox on PostgreSQL: its own pool of SANDBOX_POOL_SIZE connections, logged in as the
// confined sandbox role (role.ts), each query in a READ ONLY transaction with a statement
// timeout and transaction-local settings, and the connection reset (DISCARD ALL) afterwards. Each
// backend carries the organization it runs a query for in `application_name`
// (`tally-sandbox:<organization id>`). A statement timeout is not always enough: a function call
// that never checks for interrupts runs on past it. So a query still running a second after its
// timeout has its backend cancelled, then terminated, from Tally's own connection, and its
// connection is cut and dropped from the pool, which opens a fresh one in its place; the answer
// (and the organization's share of the sandbox) waits until that backend has really exited.
import type { Knex } from 'knex';
import pg from 'pg';
import type { Logger } from 'pino';
import { isStatementTimeout, QueryTimeoutError } from '../../errors.js';
import type { PoolUse } from '../../metrics.js';
import {
  appSettingStatement,
  NO_PARALLEL_WORKERS,
  PLAN_FOR_ALL_ROWS,
  readCapped,
  type SandboxDatabase,
  type SandboxRows,
  type SandboxStatement,
  SandboxUnavailable,
  sandboxApplicationName,
  wrapStatement,
} from './executor.js';
import { type Confinement, checkConfinement, ensureSandboxSetup } from './role.js';

/** Connections of the sandbox pool: at most this many sandbox queries run at once. */
export const SANDBOX_POOL_SIZE = 5;
/** How long past its statement timeout a query may run before its backend is stopped from outside. */
export const OVERRUN_GRACE_MS = 1_000;
/** After pg_cancel_backend, how long to wait for the query to end before pg_terminate_backend. */
const CANCEL_WAIT_MS = 250;
/** How often, and how long at most (10 minutes), to look whether a terminated backend has exited. */
const ZOMBIE_POLL_MS = 250;
const MAX_ZOMBIE_POLLS = 2_400;
const IDLE_NAME = 'tally-sandbox';

type WithStream = { connection: { stream: { destroy(err?: Error): void } }; processID?: number };

/** PostgreSQL: a pool logged in as the sandbox role, checked for confinement before use. */
class PostgresSandbox implements SandboxDatabase {
  readonly embedded = false;
  readonly slots = SANDBOX_POOL_SIZE;
  stoppedByForce = 0;
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
      const url = new URL(this.sandboxUrl ?? this.databaseUrl);
      if (!this.sandboxUrl) {
        url.username = role;
        url.password = password ?? '';
      }
      if (!this.pool) {
        this.pool = new pg.Pool({
          connectionString: url.toString(),
          max: SANDBOX_POOL_SIZE,
          idleTimeoutMillis: 30_000,
          application_name: IDLE_NAME,
        });
        this.pool.on('error', (err) => this.logger?.warn({ err: err.message }, 'sandbox connection failed'));
      }
      const client = await this.pool.connect();
      try {
        confinement = await checkConfinement(client);
      } finally {
        client.release();
      }
      if (confinement.confined) await this.checkSignalling(decodeURIComponent(url.username));
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

  /** Warns when Tally's own role could not stop a sandbox backend that overruns its timeout. */
  private async checkSignalling(role: string): Promise<void> {
    try {
      const { rows } = await this.knex.raw(
        `SELECT r.rolsuper OR pg_has_role(current_user, 'pg_signal_backend', 'USAGE')
           OR pg_has_role(current_user, ?, 'USAGE') AS can FROM pg_roles r WHERE r.rolname = current_user`,
        [role],
      );
      if (rows[0]?.can) return;
    } catch {
      // an unknown role name: reported below
    }
    this.logger?.warn(
      { role },
      `Tally's database role cannot stop sandbox queries that run past their timeout: grant it the sandbox role (GRANT "${role}" TO <Tally's role>), as \`npx tally sandbox-sql\` does.`,
    );
  }

  async run(q: SandboxStatement): Promise<SandboxRows> {
    const { confined, problems } = await this.confinement();
    if (!confined) {
      if (!q.trusted) throw new SandboxUnavailable(problems);
      return this.runTrustedOnMainPool(q);
    }
    const client = await this.pool!.connect();
    // A connection cut under an oversized result (or by the overrun guard) reports it as an error event.
    const onError = (err: Error) => this.logger?.debug({ err: err.message }, 'sandbox connection closed');
    client.on('error', onError);
    let broken = true;
    try {
      await client.query('BEGIN TRANSACTION READ ONLY');
      await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(q.timeoutMs))}`);
      await client.query('SET LOCAL search_path = pg_catalog');
      await client.query(PLAN_FOR_ALL_ROWS);
      await client.query(NO_PARALLEL_WORKERS);
      await client.query(appSettingStatement(q.appId));
      await client.query(`SET LOCAL application_name = '${sandboxApplicationName(q.organizationId)}'`);
      const result = await this.guarded(client, q, () =>
        readCapped(client, wrapStatement(q.statement), [q.appId, ...q.params], q.rowCap, q.byteCap),
      );
      if (!result.broken) {
        await client.query('ROLLBACK');
        await client.query('DISCARD ALL');
        broken = false;
      }
      return result;
    } catch (err) {
      if (isStatementTimeout(err)) {
        // The statement timeout stopped it: once its backend has rolled back (and is idle, no
        // longer counted for the organization), the connection is as good as new.
        broken = !(await this.reset(client));
        throw new QueryTimeoutError(q.timeoutMs);
      }
      throw err;
    } finally {
      // A connection that failed in any other way is closed rather than reused; the pool opens another.
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  private async reset(client: pg.ClientBase): Promise<boolean> {
    try {
      await client.query('ROLLBACK');
      await client.query('DISCARD ALL');
      return true;
    } catch {
      return false;
    }
  }

  /** Tally's own SQL when the sandbox role is not set up: the main pool, read only, same caps. */
  private async runTrustedOnMainPool(q: SandboxStatement): Promise<SandboxRows> {
    const client = (await this.knex.client.acquireConnection()) as pg.Client;
    try {
      await client.query('BEGIN TRANSACTION READ ONLY');
      await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(q.timeoutMs))}`);
      await client.query(PLAN_FOR_ALL_ROWS);
      await client.query(NO_PARALLEL_WORKERS);
      await client.query(`SET LOCAL application_name = '${sandboxApplicationName(q.organizationId)}'`);
      const result = await this.guarded(client, q, () =>
        readCapped(client, wrapStatement(q.statement), [q.appId, ...q.params], q.rowCap, q.byteCap),
      );
      if (!result.broken) await client.query('ROLLBACK');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (isStatementTimeout(err)) throw new QueryTimeoutError(q.timeoutMs);
      throw err;
    } finally {
      await this.knex.client.releaseConnection(client);
    }
  }

  /**
   * Runs the query; if it is still running OVERRUN_GRACE_MS past its statement timeout, stops it
   * from outside and rejects with QueryTimeoutError at once, whatever its backend still does.
   */
  private async guarded<T>(client: pg.ClientBase, q: SandboxStatement, start: () => Promise<T>): Promise<T> {
    const work = start();
    let stopping: Promise<void> | null = null;
    let timer: NodeJS.Timeout | undefined;
    const overrun = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        stopping = this.stop(client, q, work);
        stopping.then(
          () => reject(new QueryTimeoutError(q.timeoutMs)),
          () => reject(new QueryTimeoutError(q.timeoutMs)),
        );
      }, q.timeoutMs + OVERRUN_GRACE_MS);
    });
    overrun.catch(() => undefined);
    try {
      return await Promise.race([work, overrun]);
    } catch (err) {
      if (stopping) {
        // cutting the connection fails the query at once; the answer waits until the backend is gone
        work.catch(() => undefined);
        await (stopping as Promise<void>).catch(() => undefined);
        throw new QueryTimeoutError(q.timeoutMs);
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * pg_cancel_backend, then pg_terminate_backend if the query is still running; then cuts its
   * connection (the pool opens a fresh one for others). A backend busy in a call that checks for
   * neither runs on until that call returns: the query's answer, and its organization's share of
   * the sandbox, wait until the backend is gone, so an organization's stopped queries still count.
   */
  private async stop(client: pg.ClientBase, q: SandboxStatement, work: Promise<unknown>): Promise<void> {
    const pid = (client as unknown as WithStream).processID;
    const name = sandboxApplicationName(q.organizationId);
    const settled = work.then(
      () => true,
      () => true,
    );
    this.logger?.warn(
      { pid, organization_id: q.organizationId, app_id: q.appId, timeout_ms: q.timeoutMs },
      'a sandbox query ran past its statement timeout; stopping its backend',
    );
    this.stoppedByForce++;
    await this.signal('pg_cancel_backend', pid, name);
    const ended = await Promise.race([
      settled,
      new Promise<boolean>((r) => setTimeout(() => r(false), CANCEL_WAIT_MS)),
    ]);
    if (ended) return;
    await this.signal('pg_terminate_backend', pid, name);
    (client as unknown as WithStream).connection.stream.destroy(new Error('sandbox query stopped past its timeout'));
    await this.gone(pid, name);
  }

  /** Waits (a bounded time) until the backend has exited. */
  private async gone(pid: number | undefined, name: string): Promise<void> {
    for (let i = 0; pid && i < MAX_ZOMBIE_POLLS; i++) {
      try {
        const { rows } = await this.knex.raw('SELECT 1 FROM pg_stat_activity WHERE pid = ? AND application_name = ?', [
          pid,
          name,
        ]);
        if (rows.length === 0) return;
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, ZOMBIE_POLL_MS));
    }
  }

  /** Signals the backend from Tally's own connection, only while it still runs a sandbox query. */
  private async signal(fn: 'pg_cancel_backend' | 'pg_terminate_backend', pid: number | undefined, name: string) {
    if (!pid) return;
    try {
      await this.knex.raw(`SELECT ${fn}(pid) FROM pg_stat_activity WHERE pid = ? AND application_name = ?`, [
        pid,
        name,
      ]);
    } catch (err) {
      this.logger?.warn({ err: (err as Error).message, pid }, `could not run ${fn} on a sandbox backend`);
    }
  }

  poolUse(): PoolUse | null {
    const pool = this.pool;
    if (!pool) return null;
    return { used: pool.totalCount - pool.idleCount, free: pool.idleCount, pending: pool.waitingCount };
  }

  async close(): Promise<void> {
    await this.pool?.end();
    this.pool = null;
  }
}

export function postgresSandbox(
  knex: Knex,
  databaseUrl: string,
  sandboxUrl: string | undefined,
  logger?: Logger,
): SandboxDatabase {
  return new PostgresSandbox(knex, databaseUrl, sandboxUrl, logger);
}
