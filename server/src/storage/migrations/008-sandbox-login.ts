// The login of the SQL sandbox's PostgreSQL role (sandbox/queries/role.ts), when Tally created the
// role itself: readable by Tally's own role only (the sandbox role is granted nothing here).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sandbox_login', (t) => {
    t.text('role').primary();
    t.text('password').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('sandbox_login');
}
