// Runs one analytics statement under the analytics statement timeout, so a runaway range cannot
// hold a connection (PostgreSQL; the embedded database accepts the setting but does not enforce it).
import type { Knex } from 'knex';
import { isStatementTimeout, QueryTimeoutError } from '../errors.js';

export async function timedRows<T>(
  db: Knex,
  timeoutMs: number,
  sql: string,
  bindings: readonly unknown[],
): Promise<T[]> {
  try {
    return await db.transaction(async (trx) => {
      await trx.raw(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
      return (await trx.raw(sql, bindings as never[])).rows as T[];
    });
  } catch (err) {
    if (isStatementTimeout(err)) throw new QueryTimeoutError(timeoutMs);
    throw err;
  }
}
