// Push campaigns: the campaigns themselves, the per-app protections (frequency cap, quiet hours),
// the trigger outbox written in the ingestion transaction, the claimed sends (one row per
// campaign, user and occurrence, claimed before anything is sent), and deliveries that are
// `pending` before the provider is called, with the batch a many-recipient call belongs to.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('apps', (t) => {
    t.integer('push_frequency_cap_per_day').notNullable().defaultTo(3);
    t.text('push_quiet_hours'); // "HH:MM-HH:MM" in the organization's time zone, or null
  });
  await knex.schema.createTable('campaigns', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('title').notNullable();
    t.text('message');
    t.text('prompt');
    t.integer('max_characters');
    t.text('action_url');
    t.uuid('audience_id');
    t.boolean('audience_auto_created').notNullable().defaultTo(false);
    t.text('schedule_type').notNullable(); // now | scheduled | recurring | slipping_away | trigger
    t.timestamp('scheduled_at', { useTz: true });
    t.text('recurrence');
    t.integer('inactivity_days');
    t.text('trigger_event_name');
    t.integer('trigger_cooldown_hours');
    t.text('match_method');
    t.integer('available_events_count');
    t.text('status').notNullable(); // scheduled | live | paused | sent
    t.text('paused_from');
    t.timestamp('next_run_at', { useTz: true });
    t.timestamp('first_sent_at', { useTz: true });
    t.timestamp('completed_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.unique(['app_id', 'id']);
    t.index(['app_id', 'created_at']);
    t.index(['status', 'next_run_at']);
    t.index(['app_id', 'trigger_event_name']);
  });
  await knex.schema.createTable('campaign_trigger_outbox', (t) => {
    t.bigIncrements('seq').primary();
    t.uuid('app_id').notNullable();
    t.uuid('campaign_id').notNullable();
    t.uuid('user_id').notNullable();
    t.uuid('event_id').notNullable();
    t.timestamp('event_at', { useTz: true }).notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable();
    t.index(['app_id', 'user_id']);
  });
  await knex.schema.createTable('campaign_sends', (t) => {
    t.uuid('id').primary();
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.uuid('campaign_id').notNullable().references('campaigns.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    // Which run of the campaign: `once`, a cron time, an inactive stretch's start, an event id.
    t.text('occurrence').notNullable();
    // queued | sending | done | skipped | cancelled
    t.text('status').notNullable();
    t.text('reason'); // why skipped or cancelled
    t.text('message'); // the occurrence's text before placeholders are filled
    t.timestamp('not_before', { useTz: true }).notNullable(); // quiet hours push this later
    t.uuid('delivery_id');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.unique(['app_id', 'campaign_id', 'user_id', 'occurrence']);
    t.index(['app_id', 'user_id', 'status']);
    t.index(['status', 'not_before']);
  });
  await knex.schema.createTable('push_batches', (t) => {
    t.uuid('id').primary(); // the id of the batch's tracked link
    t.uuid('app_id').notNullable().references('apps.id').onDelete('CASCADE');
    t.uuid('campaign_id');
    t.text('action_url');
    t.integer('size').notNullable();
    t.integer('clicks').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.unique(['app_id', 'id']);
  });
  await knex.schema.alterTable('push_deliveries', (t) => {
    t.uuid('batch_id');
    t.timestamp('resolved_at', { useTz: true }); // when the provider answered
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('push_deliveries', (t) => {
    t.dropColumn('batch_id');
    t.dropColumn('resolved_at');
  });
  await knex.schema.dropTable('push_batches');
  await knex.schema.dropTable('campaign_sends');
  await knex.schema.dropTable('campaign_trigger_outbox');
  await knex.schema.dropTable('campaigns');
  await knex.schema.alterTable('apps', (t) => {
    t.dropColumn('push_frequency_cap_per_day');
    t.dropColumn('push_quiet_hours');
  });
}
