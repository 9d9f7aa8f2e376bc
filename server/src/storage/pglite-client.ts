// Runs knex on the embedded PGlite database through knex's own PostgreSQL dialect and the `pg`
// driver, so that query results have exactly the types they have on a real PostgreSQL server.
import type { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import knexModule, { type Knex } from 'knex';
import PgDialect from 'knex/lib/dialects/postgres/index.js';
import pg from 'pg';

type DialectClass = new (config: Knex.Config) => { connectionSettings: unknown };
const Base = PgDialect as DialectClass;

export function createPgliteKnex(pglite: PGlite): Knex {
  class PgliteDialect extends Base {
    _acquireOnlyConnection() {
      const connection = new pg.Client(createPgConfig(pglite) as unknown as pg.ClientConfig);
      return connection.connect().then(() => connection);
    }
  }
  return knexModule({
    client: PgliteDialect as unknown as Knex.Config['client'],
    connection: {},
    // PGlite has a single session: one connection, shared by everything in the process.
    pool: { min: 1, max: 1 },
  });
}
