// MCP JSON-RPC sessions, kept in the database so that any instance can serve any session: the
// key and organization it belongs to, what the client said at initialize, and when it was last
// used (sessions idle for 30 minutes expire).
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('mcp_sessions', (t) => {
    t.uuid('id').primary();
    t.uuid('key_id').notNullable().references('api_keys.id').onDelete('CASCADE');
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('protocol_version').notNullable();
    t.jsonb('client_capabilities').notNullable().defaultTo('{}');
    t.jsonb('client_info').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['key_id', 'last_seen_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('mcp_sessions');
}
