// The sandbox wing's long-lived state, built once per composition root (tally.ts) on the opened
// database: the executor of sandbox queries (PostgreSQL: its own pool, logged in as the confined
// role; embedded: one query at a time on the worker's connection) and the admission in front of
// it. Roots on one database each build their own, as separate processes would.
import type { Logger } from 'pino';
import type { Database } from '../storage/db.js';
import { SandboxAdmission } from './admission.js';
import { embeddedSandbox } from './queries/embedded.js';
import type { SandboxDatabase } from './queries/executor.js';
import { postgresSandbox } from './queries/postgres.js';

export interface Sandbox {
  /** Runs SQL over the sandbox relations (caller SQL once checked, and Tally's own). */
  readonly executor: SandboxDatabase;
  /** Who may run a sandbox query now: per key, per organization, and the embedded cool-downs. */
  readonly admission: SandboxAdmission;
}

export interface SandboxOptions {
  /** PostgreSQL: how the sandbox logs in (default: the sandbox role Tally sets up, on the database's URL). */
  sandboxDatabaseUrl?: string;
  logger?: Logger;
}

/** The executor for this database. */
export function sandboxExecutor(database: Database, options: SandboxOptions = {}): SandboxDatabase {
  if (database.kind === 'pglite') {
    if (!database.embedded) throw new Error('An embedded database without its worker has no sandbox.');
    return embeddedSandbox(database.knex, database.embedded);
  }
  if (!database.url) throw new Error('A PostgreSQL database without its connection string has no sandbox.');
  return postgresSandbox(database.knex, database.url, options.sandboxDatabaseUrl, options.logger);
}

/** The executor and its admission; the caller closes `executor` before the database. */
export function openSandbox(database: Database, options: SandboxOptions = {}): Sandbox {
  const executor = sandboxExecutor(database, options);
  return { executor, admission: new SandboxAdmission(executor.slots) };
}
