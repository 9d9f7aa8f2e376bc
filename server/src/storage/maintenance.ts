// Queries about the database itself rather than any app's data: readiness, the migrations applied,
// and who a connection string logs in as. None is per-app, by nature.
import knexModule, { type Knex } from 'knex';
import { migrationsAreCurrent } from './migrations/index.js';

/**
 * Not per-app: `ready` when the database answers and every migration has run, `migrating` when it
 * answers but migrations are pending; throws when it cannot be reached.
 */
export async function readiness(knex: Knex): Promise<'ready' | 'migrating'> {
  await knex.raw('select 1');
  return (await migrationsAreCurrent(knex)) ? 'ready' : 'migrating';
}

/** Not per-app: the names of the migrations applied so far, in the order they ran. */
export async function appliedMigrationNames(knex: Knex): Promise<string[]> {
  const rows: { name: string }[] = await knex('knex_migrations').select('name').orderBy('id');
  return rows.map((r) => r.name);
}

/**
 * Not per-app: the database a PostgreSQL connection string opens and the role it logs in as, read
 * over a connection of its own that is closed before returning.
 */
export async function connectionIdentity(databaseUrl: string): Promise<{ database: string; user: string }> {
  const knex = knexModule({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    const { rows } = await knex.raw('SELECT current_database() AS db, current_user AS me');
    return { database: rows[0].db, user: rows[0].me };
  } finally {
    await knex.destroy();
  }
}
