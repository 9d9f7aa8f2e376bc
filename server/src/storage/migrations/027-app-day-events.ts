// Per-app daily sums of the activity rollup (issue 33): `app_day_events` holds, per app and local
// day, the events, the events carrying revenue and their revenue, summed over `user_days`. Questions
// for events or average revenue in all or per day, week or month then read one row a day
// (language/queries/compile-rollup.ts) instead of one row per user and day. Kept by statement
// triggers on `user_days` from the rows each statement changed (new rows added, old rows taken
// back), so every path that writes `user_days` (fold, rebuild, clean-up) keeps it exact in the same
// transaction; the migration fills it from what `user_days` holds.
import type { Knex } from 'knex';

const TABLE_SQL = `
CREATE TABLE app_day_events (
  app_id uuid NOT NULL,
  day date NOT NULL,
  events bigint NOT NULL DEFAULT 0,
  revenue_events bigint NOT NULL DEFAULT 0,
  revenue numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (app_id, day)
);`;

/** A statement trigger's sums of the rows it changed, added to the day's row. */
const triggerFunction = (name: string, tables: { old?: boolean; new?: boolean }) => {
  const parts = [
    ...(tables.new ? ['SELECT app_id, day, events, revenue_events, revenue FROM new_rows'] : []),
    ...(tables.old ? ['SELECT app_id, day, -events, -revenue_events, -revenue FROM old_rows'] : []),
  ];
  return `
CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO app_day_events (app_id, day, events, revenue_events, revenue)
  SELECT r.app_id, r.day, sum(r.events), sum(r.revenue_events), sum(r.revenue)
  FROM (${parts.join(' UNION ALL ')}) r(app_id, day, events, revenue_events, revenue)
  GROUP BY 1, 2
  HAVING sum(r.events) <> 0 OR sum(r.revenue_events) <> 0 OR sum(r.revenue) <> 0
  ORDER BY 1, 2
  ON CONFLICT (app_id, day) DO UPDATE SET events = app_day_events.events + excluded.events,
    revenue_events = app_day_events.revenue_events + excluded.revenue_events,
    revenue = app_day_events.revenue + excluded.revenue;
  RETURN NULL;
END $$;`;
};

const TRIGGERS_SQL = `
CREATE TRIGGER user_days_sums_inserted AFTER INSERT ON user_days
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_day_sums_inserted();
CREATE TRIGGER user_days_sums_updated AFTER UPDATE ON user_days
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_day_sums_updated();
CREATE TRIGGER user_days_sums_deleted AFTER DELETE ON user_days
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_day_sums_deleted();
`;

const FILL_SQL = `
INSERT INTO app_day_events (app_id, day, events, revenue_events, revenue)
SELECT app_id, day, sum(events), sum(revenue_events), sum(revenue) FROM user_days GROUP BY 1, 2 ORDER BY 1, 2;
`;

const FUNCTIONS = ['tally_day_sums_inserted()', 'tally_day_sums_updated()', 'tally_day_sums_deleted()'];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(TABLE_SQL);
  await knex.raw(triggerFunction('tally_day_sums_inserted', { new: true }));
  await knex.raw(triggerFunction('tally_day_sums_updated', { old: true, new: true }));
  await knex.raw(triggerFunction('tally_day_sums_deleted', { old: true }));
  await knex.raw(TRIGGERS_SQL);
  await knex.raw(FILL_SQL);
  for (const fn of FUNCTIONS) await knex.raw(`REVOKE ALL ON FUNCTION ${fn} FROM PUBLIC`);
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['inserted', 'updated', 'deleted'])
    await knex.raw(`DROP TRIGGER IF EXISTS user_days_sums_${t} ON user_days`);
  for (const fn of FUNCTIONS) await knex.raw(`DROP FUNCTION IF EXISTS ${fn}`);
  await knex.raw('DROP TABLE IF EXISTS app_day_events');
}
