// Website traffic: page visits logged by the browser SDK (with their bot classification) and the
// Web Push subscriptions browsers register. Both hang from the visitor's user row, so identifying
// a visitor (or erasing a user) moves (or removes) them with it.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('visits', (t) => {
    t.uuid('id').notNullable();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE'); // the visitor's user
    t.text('visitor_id').notNullable(); // the identifier the SDK sent
    t.text('visit_url').notNullable();
    t.text('path');
    t.text('referrer');
    t.text('page_title');
    t.text('ua');
    t.text('ip');
    t.jsonb('signals').notNullable().defaultTo('{}');
    t.jsonb('advanced_signals');
    t.boolean('is_bot').notNullable();
    t.text('bot_reason'); // comma-separated reasons when is_bot, else null
    t.uuid('event_id'); // the page_view event recorded for this visit
    t.timestamp('created_at', { useTz: true }).notNullable(); // the visit's time
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['app_id', 'id']);
    t.index(['app_id', 'created_at']);
    t.index(['app_id', 'user_id', 'created_at']);
  });
  await knex.schema.createTable('push_subscriptions', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('endpoint').notNullable();
    t.text('p256dh').notNullable();
    t.text('auth').notNullable();
    t.timestamp('expires_at', { useTz: true }); // from the subscription's expirationTime, if any
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.unique(['app_id', 'endpoint']);
    t.index(['app_id', 'user_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('push_subscriptions');
  await knex.schema.dropTable('visits');
}
