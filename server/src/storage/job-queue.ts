// The database adapter of the job runner (pg-boss): its SQL runs on a connection taken from knex's
// pool for each statement, so on the embedded database jobs share the one connection safely and
// never land inside another request's open transaction. `$n` placeholders go straight to `pg`
// (knex.raw would read `?` in pg-boss's SQL as bindings).
import type { Knex } from 'knex';
import type pg from 'pg';

export interface JobQueueDb {
  executeSql(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}

export function jobQueueDatabase(knex: Knex): JobQueueDb {
  return {
    async executeSql(text, values) {
      const conn = (await knex.client.acquireConnection()) as pg.Client;
      try {
        return await conn.query(text, values);
      } finally {
        await knex.client.releaseConnection(conn);
      }
    },
  };
}
