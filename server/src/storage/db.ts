// Opens the database: PostgreSQL when a connection string is given, otherwise the embedded PGlite
// database in the data directory, run in a worker thread (storage/embedded). Both are used through
// knex with the same migrations and SQL. The sandbox wing builds its executor on the opened
// database (sandbox/open.ts, called by the composition root).
import path from 'node:path';
import knexModule, { type Knex } from 'knex';
import type { Logger } from 'pino';
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
    logger?.[level]({ knex: String(message) }, 'database driver');
  return { warn: to('debug'), error: to('warn'), deprecate: to('debug'), debug: to('debug') };
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
