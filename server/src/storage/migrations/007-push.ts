// Push: each app's provider configuration (secrets encrypted with SECRET_KEY) and one row per
// notification sent, whose id is the `deliveryId` of the tracked click link.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('push_providers', (t) => {
    t.uuid('app_id').primary().references('apps.id').onDelete('CASCADE');
    t.text('provider').notNullable(); // wonderpush | onesignal | webpush | webhook
    // Non-secret settings: base_url, onesignal_app_id, webhook_url, vapid_subject, vapid_public_key.
    t.jsonb('settings').notNullable().defaultTo('{}');
    // AES-256-GCM envelope of the secret settings (access token, REST API key, webhook secret,
    // VAPID private key); never plaintext.
    t.text('secrets');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('push_deliveries', (t) => {
    t.uuid('id').primary(); // our deliveryId
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.uuid('campaign_id'); // null for a direct send
    t.text('provider').notNullable();
    t.text('provider_message_id');
    t.text('title').notNullable();
    t.text('message').notNullable();
    t.boolean('generated').notNullable().defaultTo(false);
    t.text('action_url');
    t.text('status').notNullable(); // sent | delivered | failed
    t.text('error');
    t.integer('recipients').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('clicked_at', { useTz: true });
    t.unique(['app_id', 'id']);
    t.index(['app_id', 'user_id', 'created_at']);
    t.index(['app_id', 'campaign_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('push_deliveries');
  await knex.schema.dropTable('push_providers');
}
