// Released versions of an app, read by the MCP versions resource.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('app_versions', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('version').notNullable();
    t.text('release_notes');
    t.timestamp('released_at', { useTz: true }).notNullable();
    t.text('created_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['app_id', 'released_at']);
    t.unique(['app_id', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('app_versions');
}
