// Runs knex on the embedded database through knex's own PostgreSQL dialect and the `pg` driver,
// over a stream to the PGlite worker thread (storage/embedded/host.ts), so that query results
// have exactly the types they have on a real PostgreSQL server and no query runs on the main
// thread. A connection opened while the worker restarts waits for it.
import knexModule, { type Knex } from 'knex';
import PgDialect from 'knex/lib/dialects/postgres/index.js';
import pg from 'pg';
import type { EmbeddedHost } from './embedded/host.js';

type DialectClass = new (config: Knex.Config) => { connectionSettings: unknown };
const Base = PgDialect as DialectClass;

/** A `pg` client connected to the embedded database (for knex, and for the sandbox's own use). */
export async function connectEmbedded(host: EmbeddedHost): Promise<pg.Client> {
  await host.ready();
  const client = new pg.Client({
    stream: () => host.openStream(),
    user: 'postgres',
    database: 'postgres',
  } as pg.ClientConfig);
  await client.connect();
  return client;
}

export function createPgliteKnex(host: EmbeddedHost, log?: Knex.Config['log']): Knex {
  class PgliteDialect extends Base {
    async _acquireOnlyConnection() {
      const connection = (await connectEmbedded(host)) as pg.Client & { __knex__disposed?: unknown };
      // As knex's own pg dialect does: a connection that failed is destroyed when released.
      connection.on('error', (err) => {
        connection.__knex__disposed = err;
      });
      connection.on('end', () => {
        connection.__knex__disposed ??= 'Connection ended unexpectedly';
      });
      return connection;
    }
  }
  return knexModule({
    client: PgliteDialect as unknown as Knex.Config['client'],
    connection: {},
    // PGlite has a single session: one connection, shared by everything in the process.
    pool: { min: 1, max: 1 },
    // A failed query's error names its SQL with placeholders, never its values (they may be anyone's data).
    compileSqlOnError: false,
    log,
  });
}
