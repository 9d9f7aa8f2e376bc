// Campaigns a model starts: who created each campaign (the admin API, or which MCP key), the app
// setting that lets an operator turn campaign creation through MCP off, and audit entries that
// are about a campaign rather than a user (actor kind and name, the campaign, no user).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('campaigns', (t) => {
    t.text('created_by_kind'); // admin | mcp; null for campaigns created before this was recorded
    t.uuid('created_by_key_id'); // the MCP key (kept after the key is revoked)
    t.text('created_by_key_name'); // the key's label when the campaign was created
  });
  await knex.schema.alterTable('apps', (t) => {
    t.boolean('mcp_campaigns').notNullable().defaultTo(true);
  });
  await knex.schema.alterTable('audit_entries', (t) => {
    t.text('actor_kind'); // admin | rest | mcp; null for entries written before this was recorded
    t.text('actor_name');
    t.uuid('campaign_id');
  });
  await knex.raw('ALTER TABLE audit_entries ALTER COLUMN user_ref DROP NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DELETE FROM audit_entries WHERE user_ref IS NULL`);
  await knex.raw('ALTER TABLE audit_entries ALTER COLUMN user_ref SET NOT NULL');
  await knex.schema.alterTable('audit_entries', (t) => {
    t.dropColumn('campaign_id');
    t.dropColumn('actor_name');
    t.dropColumn('actor_kind');
  });
  await knex.schema.alterTable('apps', (t) => t.dropColumn('mcp_campaigns'));
  await knex.schema.alterTable('campaigns', (t) => {
    t.dropColumn('created_by_key_name');
    t.dropColumn('created_by_key_id');
    t.dropColumn('created_by_kind');
  });
}
