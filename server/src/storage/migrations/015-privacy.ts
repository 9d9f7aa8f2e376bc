// Privacy: the audit trail of erasures and exports (who, when, which user id, counts; never the
// data itself), and the index retention needs to find an app's old push deliveries by time.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_entries', (t) => {
    t.uuid('id').notNullable();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('action').notNullable(); // user.erase | user.export
    t.text('actor').notNullable(); // the REST key's id, or 'admin'
    t.text('user_ref').notNullable(); // the identifier the request named
    t.jsonb('counts').notNullable().defaultTo('{}');
    t.boolean('completed').notNullable().defaultTo(true);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.primary(['app_id', 'id']);
    t.index(['app_id', 'created_at']);
  });
  await knex.raw('CREATE INDEX IF NOT EXISTS push_deliveries_app_time ON push_deliveries (app_id, created_at)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS push_deliveries_app_time');
  await knex.schema.dropTable('audit_entries');
}
