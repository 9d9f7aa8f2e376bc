// Push delivery you can trust: how many times a delivery was offered to its provider, when the
// last attempt started and when a campaign send was taken from the queue, by the database's clock
// (a `pending` delivery or `sending` send older than the sweeper's threshold was left by a crash), and why a failed delivery failed (`no_device`, `subscription_gone`,
// `refused`), so campaign figures count users without a device apart from refusals.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('push_deliveries', (t) => {
    t.integer('attempts').notNullable().defaultTo(1);
    // the database's clock, not the instance's: instances may disagree, the database does not
    t.timestamp('attempted_at', { useTz: true }).defaultTo(knex.fn.now());
    t.text('failure_kind');
  });
  await knex.schema.alterTable('campaign_sends', (t) => {
    t.timestamp('taken_at', { useTz: true }); // when an instance took it from the queue (database clock)
  });
  await knex.raw(
    `CREATE INDEX IF NOT EXISTS push_deliveries_pending ON push_deliveries (attempted_at) WHERE status = 'pending'`,
  );
  await knex.raw(
    `CREATE INDEX IF NOT EXISTS campaign_sends_sending ON campaign_sends (taken_at) WHERE status = 'sending'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS campaign_sends_sending');
  await knex.raw('DROP INDEX IF EXISTS push_deliveries_pending');
  await knex.schema.alterTable('campaign_sends', (t) => {
    t.dropColumn('taken_at');
  });
  await knex.schema.alterTable('push_deliveries', (t) => {
    t.dropColumn('failure_kind');
    t.dropColumn('attempted_at');
    t.dropColumn('attempts');
  });
}
