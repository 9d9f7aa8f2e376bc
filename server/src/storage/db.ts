// Opens the database: PostgreSQL when a connection string is given, otherwise the embedded PGlite
// database in the data directory. Both are used through knex with the same migrations and SQL.
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import knexModule, { type Knex } from 'knex';
import { type DataDirLock, lockDataDir } from './lock.js';
import { runMigrations } from './migrations/index.js';
import { createPgliteKnex } from './pglite-client.js';

export type DatabaseKind = 'postgres' | 'pglite';

export interface Database {
  readonly knex: Knex;
  readonly kind: DatabaseKind;
  /** The PGlite instance in embedded mode (tests dump it as a template). */
  readonly pglite?: PGlite;
  close(): Promise<void>;
}

export interface OpenOptions {
  databaseUrl?: string;
  /** Directory of the embedded database (':memory:' keeps it in memory); ignored when databaseUrl is set. */
  dataDir?: string;
  /** Embedded only: start from this dumped data directory (a tarball) in memory. */
  loadDataDir?: Blob;
  /** Run migrations after opening (default true). */
  migrate?: boolean;
}

export async function openDatabase(options: OpenOptions): Promise<Database> {
  const db = options.databaseUrl ? openPostgres(options.databaseUrl) : await openPglite(options);
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

function openPostgres(databaseUrl: string): Database {
  const knex = knexModule({
    client: 'pg',
    connection: databaseUrl,
    pool: { min: 0, max: 10 },
  });
  return { knex, kind: 'postgres', close: () => knex.destroy() };
}

async function openPglite(options: OpenOptions): Promise<Database> {
  let lock: DataDirLock | undefined;
  let pglite: PGlite;
  if (options.loadDataDir) {
    pglite = await PGlite.create({ loadDataDir: options.loadDataDir });
  } else if (options.dataDir === ':memory:') {
    pglite = await PGlite.create();
  } else {
    const dataDir = options.dataDir ?? './.data';
    lock = lockDataDir(dataDir);
    try {
      pglite = await PGlite.create({ dataDir: path.join(dataDir, 'pgdata') });
    } catch (err) {
      lock.release();
      throw err;
    }
  }
  const knex = createPgliteKnex(pglite);
  return {
    knex,
    kind: 'pglite',
    pglite,
    async close() {
      await knex.destroy();
      await pglite.close();
      lock?.release();
    },
  };
}
