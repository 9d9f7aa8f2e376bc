// The database adapter of the job runner (pg-boss): its SQL runs on a connection taken from knex's
// pool for each statement, so on the embedded database jobs share the one connection safely and
// never land inside another request's open transaction. `$n` placeholders go straight to `pg`
// (knex.raw would read `?` in pg-boss's SQL as bindings).
//
// pg-boss marks a job completed or failed after it ran without waiting for the statement (pg-boss
// 10.4, manager.js `onFetch`): if the database is away at that moment (the embedded database's
// thread restarting, PostgreSQL restarting), the rejection reaches no one, and Node ends the
// process on an unhandled rejection. Those two statements are tried again once, then given up with
// a warning: the job stays active until pg-boss's own expiry fails it, and it runs again (every
// job of Tally's may run twice).
import type { Knex } from 'knex';
import type pg from 'pg';

export interface JobQueueDb {
  executeSql(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

/** pg-boss's statements that complete or fail jobs by id (plans.js `completeJobs`, `failJobsById`). */
export function isJobOutcome(text: string): boolean {
  return (
    text.includes('AND id IN (SELECT UNNEST($2::uuid[]))') &&
    (/SET completed_on = now\(\),\s+state = 'completed'/.test(text) || text.includes('WITH deleted_jobs AS ('))
  );
}

const RETRY_AFTER_MS = 500;

export function jobQueueDatabase(knex: Knex, warn: (err: unknown) => void = () => {}): JobQueueDb {
  const run = async (text: string, values: unknown[]) => {
    const conn = (await knex.client.acquireConnection()) as pg.Client;
    try {
      return await conn.query(text, values);
    } finally {
      await knex.client.releaseConnection(conn);
    }
  };
  return {
    async executeSql(text, values) {
      if (!isJobOutcome(text)) return run(text, values);
      try {
        return await run(text, values);
      } catch {
        await new Promise((r) => setTimeout(r, RETRY_AFTER_MS));
        try {
          return await run(text, values);
        } catch (err) {
          warn(err);
          return { rows: [{ count: '0' }] };
        }
      }
    },
  };
}
