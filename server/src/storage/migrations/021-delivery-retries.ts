// Retries that survive the request and the process: a trigger occurrence stays in the outbox until
// the transaction that claims its sends deletes it, with its attempts, when it may be taken next
// (a lease while an instance works on it, then the backoff after a failure) and its last error; a
// push delivery waiting for its next attempt on the job runner says when that attempt is due.
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('campaign_trigger_outbox', (t) => {
    t.integer('attempts').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true }); // null: due now
    t.text('last_error');
  });
  await knex.schema.alterTable('push_deliveries', (t) => {
    // set while `pending` waits for a retry; null while an attempt is in flight or once resolved
    t.timestamp('next_attempt_at', { useTz: true });
  });
  await knex.raw(
    `CREATE INDEX IF NOT EXISTS push_deliveries_retry ON push_deliveries (next_attempt_at) WHERE status = 'pending'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP INDEX IF EXISTS push_deliveries_retry');
  await knex.schema.alterTable('push_deliveries', (t) => {
    t.dropColumn('next_attempt_at');
  });
  await knex.schema.alterTable('campaign_trigger_outbox', (t) => {
    t.dropColumn('last_error');
    t.dropColumn('next_attempt_at');
    t.dropColumn('attempts');
  });
}
