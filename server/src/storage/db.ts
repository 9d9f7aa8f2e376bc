// Opens the database: PostgreSQL when a connection string is given, otherwise the embedded PGlite
// database in the data directory, run in a worker thread (storage/embedded). Both are used through
// knex with the same migrations and SQL. The sandbox wing builds its executor on the opened
// database (sandbox/open.ts, called by the composition root).
import path from 'node:path';
import knexModule, { type Knex } from 'knex';
import type { Logger } from 'pino';
import { safeError } from '../logger.js';
import type { PoolUse } from '../metrics.js';
import { EmbeddedHost } from './embedded/host.js';
import { type DataDirLock, lockDataDir } from './lock.js';
import { runMigrations } from './migrations/index.js';
import { createPgliteKnex } from './pglite-client.js';

export type DatabaseKind = 'postgres' | 'pglite';

export interface Database {
  readonly knex: Knex;
  readonly kind: DatabaseKind;
  /** The connection string (PostgreSQL only). */
  readonly url?: string;
  /** The embedded database's worker (embedded mode only). */
  readonly embedded?: EmbeddedHost;
  close(): Promise<void>;
}

export interface OpenOptions {
  databaseUrl?: string;
  /** Directory of the embedded database (':memory:' keeps it in memory); ignored when databaseUrl is set. */
  dataDir?: string;
  /** Run migrations after opening (default true). */
  migrate?: boolean;
  logger?: Logger;
}

/** knex's own warnings (a connection it discards, for instance) go to our log, not the console. */
export function knexLog(logger: Logger | undefined): Knex.Config['log'] {
  const to = (level: 'debug' | 'warn') => (message: unknown) =>
    logger?.[level]({ knex: safeError(String(message)) }, 'database driver');
  return { warn: to('debug'), error: to('warn'), deprecate: to('debug'), debug: to('debug') };
}

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/** How busy the database's connection pool (knex's) is; null before knex has made it or after it closed. */
export function poolUse(database: Database): PoolUse | null {
  const pool = (database.knex.client as { pool?: TarnPool | null }).pool;
  if (!pool) return null;
  return { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires() };
}

export async function openDatabase(options: OpenOptions): Promise<Database> {
  const db = options.databaseUrl ? openPostgres(options) : await openPglite(options);
  if (options.migrate !== false) {
    try {
      await runMigrations(db.knex);
    } catch (err) {
      await db.close();
      throw err;
    }
  }
  return db;
}

function openPostgres(options: OpenOptions): Database {
  const databaseUrl = options.databaseUrl!;
  const knex = knexModule({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: 0, max: 10 },
    // A failed query's error names its SQL with placeholders, never its values (they may be anyone's data).
    compileSqlOnError: false,
    log: knexLog(options.logger),
  });
  return {
    knex,
    kind: 'postgres',
    url: databaseUrl,
    async close() {
      await knex.destroy();
    },
  };
}

async function openPglite(options: OpenOptions): Promise<Database> {
  let lock: DataDirLock | undefined;
  let host: EmbeddedHost;
  if (options.dataDir === ':memory:') {
    host = new EmbeddedHost(undefined, options.logger);
  } else {
    const dataDir = options.dataDir ?? './.data';
    lock = lockDataDir(dataDir);
    host = new EmbeddedHost(path.resolve(dataDir, 'pgdata'), options.logger);
  }
  try {
    await host.start();
  } catch (err) {
    lock?.release();
    throw err;
  }
  const knex = createPgliteKnex(host, knexLog(options.logger));
  return {
    knex,
    kind: 'pglite',
    embedded: host,
    async close() {
      await knex.destroy();
      await host.close();
      lock?.release();
    },
  };
}
