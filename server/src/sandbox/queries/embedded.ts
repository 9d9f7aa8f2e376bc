// The sandbox on the embedded database (PGlite, one superuser session in the worker thread): one
// sandbox query at a time, in its own queue, so other requests wait for at most the one running.
// Before a query runs, its plan is checked: refused when the planner's cost is over
// EMBEDDED_MAX_COST, or when its joins could make more than EMBEDDED_MAX_JOIN_ROWS rows with this
// app's own key frequencies (plan.ts: the shapes that used to reach the time cap, such as
// a self-join on a low-cardinality column). A query over its time cap stops the worker, which
// restarts on the same data.
import type { Knex } from 'knex';
import type pg from 'pg';
import { QueryTimeoutError } from '../../errors.js';
import type { EmbeddedHost } from '../../storage/embedded/host.js';
import { TimeCapExceeded } from '../../storage/embedded/host.js';
import {
  EMBEDDED_MAX_COST,
  PLAN_FOR_ALL_ROWS,
  QueryTooExpensive,
  readCapped,
  type SandboxDatabase,
  type SandboxRows,
  type SandboxStatement,
  wrapStatement,
} from './executor.js';
import { appKeyCounts, appKeyStats, joinRows, type KeyCounts, type KeyStats } from './plan.js';
import type { Confinement } from './role.js';

/** Above this many rows made by its joins (re-estimated), embedded mode refuses a query before running it. */
export const EMBEDDED_MAX_JOIN_ROWS = 2_000_000;
/** An app's key frequencies are read again after this long. */
const KEY_STATS_TTL_MS = 60_000;

type Plan = { Plan?: Record<string, unknown> & { 'Total Cost'?: number } };

/** Embedded: one sandbox query at a time, time-capped by restarting the worker. */
class EmbeddedSandbox implements SandboxDatabase {
  readonly embedded = true;
  readonly slots = 1;
  stoppedByForce = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly keyCounts = new Map<string, { at: number; counts: KeyCounts }>();

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
        await this.refuseIfTooExpensive(client, q.appId, text, values);
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
      if (err instanceof TimeCapExceeded) {
        this.stoppedByForce++;
        throw new QueryTimeoutError(q.timeoutMs);
      }
      if (open) await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      await this.knex.client.releaseConnection(client);
    }
  }

  private async refuseIfTooExpensive(client: pg.Client, appId: string, text: string, values: unknown[]) {
    const explained = await client.query({ text: `EXPLAIN (FORMAT JSON) ${text}`, values });
    const plan = (explained.rows[0]?.['QUERY PLAN'] as Plan[] | undefined)?.[0]?.Plan;
    const cost = Number(plan?.['Total Cost']);
    if (!(cost <= EMBEDDED_MAX_COST)) throw new QueryTooExpensive(Math.round(cost));
    const rows = joinRows(plan!, await this.statsOf(client, appId));
    if (rows > EMBEDDED_MAX_JOIN_ROWS) throw new QueryTooExpensive(Math.round(cost), Math.round(rows));
  }

  private async statsOf(client: pg.Client, appId: string): Promise<KeyStats> {
    let cached = this.keyCounts.get(appId);
    if (!cached || Date.now() - cached.at >= KEY_STATS_TTL_MS) {
      cached = { at: Date.now(), counts: await appKeyCounts(client, appId) };
      this.keyCounts.set(appId, cached);
      if (this.keyCounts.size > 10_000) this.keyCounts.delete(this.keyCounts.keys().next().value!);
    }
    return appKeyStats(client, appId, cached.counts);
  }

  /** One query at a time on the embedded connection: no pool of its own. */
  poolUse(): null {
    return null;
  }

  async close(): Promise<void> {}
}

export function embeddedSandbox(knex: Knex, host: EmbeddedHost): SandboxDatabase {
  return new EmbeddedSandbox(knex, host);
}
