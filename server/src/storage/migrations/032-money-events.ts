// The partial index of the events that carry money (a `revenue` or `amount` key, DESIGN §6; human
// traffic only) also holds their name and properties (issue 33). A question on money broken down
// by a property ("total revenue by country last month") then reads that month's money events from
// the index alone instead of every event of the month: at ten million events, 185,000 index
// entries in place of 3.4 million rows on 87,000 pages. The statements the language engine
// compiles name the same condition (compile-parts.ts, `carriesMoney`), as the metrics do
// (analytics/queries/metrics.ts), which PostgreSQL needs in order to use it.
//
// It replaces the index of migration 004 with the same condition (by app and time, with the user),
// so writing an event updates as many indexes as before: one more only for events with money.
// Built with CONCURRENTLY, outside a transaction, as migration 029 is: an install keeps taking
// events meanwhile, and a run that stopped part-way (leaving an invalid index) drops it and builds
// it again. (`\\?` is jsonb's `?` operator: knex reads a bare `?` as a placeholder.)
import type { Knex } from 'knex';

export const config = { transaction: false };

const OLD = 'events_app_revenue_time';
export const MONEY_INDEX = 'events_money_time';
const CONDITION = `NOT is_bot AND (properties \\? 'revenue' OR properties \\? 'amount')`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${MONEY_INDEX}`);
  await knex.raw(
    `CREATE INDEX CONCURRENTLY ${MONEY_INDEX} ON events (app_id, created_at)
     INCLUDE (user_id, event_name, properties) WHERE ${CONDITION}`,
  );
  await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${OLD}`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(
    `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${OLD} ON events (app_id, created_at) INCLUDE (user_id) WHERE ${CONDITION}`,
  );
  await knex.raw(`DROP INDEX CONCURRENTLY IF EXISTS ${MONEY_INDEX}`);
}
