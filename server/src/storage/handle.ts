// The database handle code outside storage/ passes to storage functions without looking inside
// it, the one way it opens a transaction, and the driver facts it may need to react to. Nothing
// outside storage/ imports knex or pg: this module names their types for it.
import type { Knex } from 'knex';

/** A database handle (the pool or an open transaction); only storage functions use it. */
export type Db = Knex;

/** An open transaction, accepted wherever a `Db` is. */
export type Tx = Knex.Transaction;

/**
 * Runs `work` in one transaction: committed when it resolves, rolled back when it throws. Storage
 * functions called with the transaction take part in it.
 */
export function inTransaction<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction(work);
}

/** Whether a database error is a unique-constraint violation (a concurrent insert got there first). */
export function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '23505';
}

/** serialization_failure or deadlock_detected: the transaction rolled back whole and may run again. */
export function isRetryableConflict(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === '40001' || code === '40P01';
}

/**
 * Runs `work` (a whole transaction, or one statement) again when PostgreSQL rolled it back to break
 * a deadlock or a serialization conflict, up to `attempts` times, after a short random pause.
 */
export async function retryOnConflict<T>(work: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await work();
    } catch (err) {
      if (i >= attempts || !isRetryableConflict(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * i));
    }
  }
}
