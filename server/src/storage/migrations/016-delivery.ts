// Push delivery you can trust: how many times a delivery was offered to its provider, when the
// last attempt started (a `pending` row whose attempt is older than the sweeper's threshold was
// left by a crash), and why a failed delivery failed (`no_device`, `subscription_gone`,
// `refused`), so campaign figures count users without a device apart from refusals.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('push_deliveries', (t) => {
    t.integer('attempts').notNullable().defaultTo(1);
    t.timestamp('attempted_at', { useTz: true });
    t.text('failure_kind');
  });
  await knex.raw(
    `CREATE INDEX IF NOT EXISTS push_deliveries_pending ON push_deliveries (created_at) WHERE status = 'pending'`,
  );
  await knex.raw(
    `CREATE INDEX IF NOT EXISTS campaign_sends_sending ON campaign_sends (updated_at) WHERE status = 'sending'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS campaign_sends_sending');
  await knex.raw('DROP INDEX IF EXISTS push_deliveries_pending');
  await knex.schema.alterTable('push_deliveries', (t) => {
    t.dropColumn('failure_kind');
    t.dropColumn('attempted_at');
    t.dropColumn('attempts');
  });
}
