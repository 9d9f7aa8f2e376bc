// Audiences: a name, the natural-language criteria, how they were interpreted (a segment
// definition from the rules engine, or SQL written by the language model), and the last count.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('audiences', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description');
    t.text('criteria').notNullable();
    t.jsonb('definition'); // query_method rules: the segment definition (AST)
    t.text('sql'); // query_method llm_sql / sql: the statement run in the SQL sandbox
    t.text('query_method').notNullable(); // rules | llm_sql | sql
    t.double('confidence').notNullable();
    t.bigInteger('user_count').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('counted_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['app_id', 'id']);
    t.index(['app_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('audiences');
}
