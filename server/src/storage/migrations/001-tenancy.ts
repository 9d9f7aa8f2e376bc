// Organizations, apps, API keys and server settings: the tenancy every other table hangs from.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('organizations', (t) => {
    t.uuid('id').primary();
    t.text('name').notNullable();
    t.text('description');
    t.text('timezone').notNullable().defaultTo('UTC');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('apps', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.text('website_url');
    t.jsonb('authorized_domains').notNullable().defaultTo('[]');
    t.text('bot_detection').notNullable().defaultTo('basic');
    t.boolean('advanced_attested').notNullable().defaultTo(false);
    t.text('consent_message');
    t.jsonb('conversion_events').notNullable().defaultTo('[]');
    t.integer('retention_days');
    t.text('ip_mode').notNullable().defaultTo('full');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['organization_id']);
  });
  await knex.schema.createTable('api_keys', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('kind').notNullable(); // rest | mcp
    t.text('name').notNullable().defaultTo('');
    t.text('key_prefix').notNullable(); // first characters, to tell keys apart in listings
    t.text('key_hash').notNullable().unique(); // SHA-256 of the whole key; the key itself is never stored
    t.jsonb('permissions').notNullable().defaultTo('[]');
    t.boolean('org_wide').notNullable().defaultTo(false);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
    t.index(['app_id']);
  });
  await knex.schema.createTable('server_settings', (t) => {
    t.text('key').primary();
    t.jsonb('value').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('server_settings');
  await knex.schema.dropTable('api_keys');
  await knex.schema.dropTable('apps');
  await knex.schema.dropTable('organizations');
}
