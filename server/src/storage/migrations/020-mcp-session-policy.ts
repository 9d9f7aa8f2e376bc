// MCP sessions keep the logging level their client chose (logging/setLevel), so that it holds on
// every request and every instance; null until the client sets one.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mcp_sessions', (t) => {
    t.text('log_level');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('mcp_sessions', (t) => {
    t.dropColumn('log_level');
  });
}
