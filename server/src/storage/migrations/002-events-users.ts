// Users (external id as a mutable label on an internal id), aliases, events that reference the
// internal id, insert_id dedup in its own table, and the event dictionary with daily volumes.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('external_id').notNullable();
    t.text('email');
    t.text('phone');
    t.jsonb('properties').notNullable().defaultTo('{}');
    t.jsonb('origin');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_active', { useTz: true });
    t.bigInteger('event_count').notNullable().defaultTo(0);
    t.unique(['app_id', 'external_id']);
    t.unique(['app_id', 'id']);
  });
  await knex.schema.createTable('user_aliases', (t) => {
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('alias_id').notNullable();
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['app_id', 'alias_id']);
    t.index(['user_id']);
  });
  await knex.schema.createTable('events', (t) => {
    t.uuid('id').notNullable();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable(); // internal id: a rename never touches this table
    t.text('event_name').notNullable();
    t.jsonb('properties').notNullable().defaultTo('{}');
    t.text('ip');
    t.text('ua');
    t.text('source').notNullable().defaultTo('api'); // api | website
    t.boolean('is_bot').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable(); // the event's time
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['app_id', 'id']);
    t.index(['app_id', 'created_at']);
    t.index(['app_id', 'user_id', 'created_at']);
    t.index(['app_id', 'event_name', 'created_at']);
  });
  await knex.schema.createTable('event_dedup', (t) => {
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('insert_id').notNullable();
    t.uuid('event_id').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable();
    t.primary(['app_id', 'insert_id']);
    t.index(['received_at']);
  });
  await knex.schema.createTable('event_definitions', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('event_name').notNullable();
    t.text('display_name');
    t.text('description');
    t.text('category');
    t.boolean('archived').notNullable().defaultTo(false);
    t.jsonb('properties').notNullable().defaultTo('{}');
    t.timestamp('first_seen', { useTz: true }).notNullable();
    t.timestamp('last_seen', { useTz: true }).notNullable();
    t.bigInteger('volume').notNullable().defaultTo(0);
    t.unique(['app_id', 'event_name']);
  });
  await knex.schema.createTable('event_daily_counts', (t) => {
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('event_name').notNullable();
    t.date('day').notNullable();
    t.bigInteger('count').notNullable().defaultTo(0);
    t.primary(['app_id', 'event_name', 'day']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['event_daily_counts', 'event_definitions', 'event_dedup', 'events', 'user_aliases', 'users']) {
    await knex.schema.dropTable(table);
  }
}
