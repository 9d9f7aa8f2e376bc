// Per-user totals of the activity rollup (issue 33): `user_totals` holds, per app and user, the
// events, the events carrying revenue and their revenue over all time, summed over `user_days`.
// Questions per user over all time ("users with more than 200 events", "top 10 users by revenue")
// then read one row a user (language/queries/compile-rollup.ts) instead of every day of every user
// (1.75 million rows at ten million events). Kept by statement triggers on `user_days` from the
// rows each statement changed (new rows added, old rows taken back), like `app_day_events`
// (migration 027), so every path that writes `user_days` (fold, rebuild, clean-up) keeps it exact
// in the same transaction; a user whose figures all fall to zero (erased, merged away, every event
// deleted) loses the row. Only one session writes an app's `user_days` at a time (the rollup's
// advisory lock), so the rows are never contended. The migration fills it from `user_days`.
import type { Knex } from 'knex';

const TABLE_SQL = `
CREATE TABLE user_totals (
  app_id uuid NOT NULL,
  user_id uuid NOT NULL,
  events bigint NOT NULL DEFAULT 0,
  revenue_events bigint NOT NULL DEFAULT 0,
  revenue numeric NOT NULL DEFAULT 0,
  PRIMARY KEY (app_id, user_id)
);`;

/** A statement trigger's sums of the rows it changed, per user, added to the user's row. */
const triggerFunction = (name: string, tables: { old?: boolean; new?: boolean }) => {
  const parts = [
    ...(tables.new ? ['SELECT app_id, user_id, events, revenue_events, revenue FROM new_rows'] : []),
    ...(tables.old ? ['SELECT app_id, user_id, -events, -revenue_events, -revenue FROM old_rows'] : []),
  ];
  return `
CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE v_apps uuid[]; v_users uuid[];
BEGIN
  WITH changed AS (
    INSERT INTO user_totals (app_id, user_id, events, revenue_events, revenue)
    SELECT r.app_id, r.user_id, sum(r.events), sum(r.revenue_events), sum(r.revenue)
    FROM (${parts.join(' UNION ALL ')}) r(app_id, user_id, events, revenue_events, revenue)
    GROUP BY 1, 2
    HAVING sum(r.events) <> 0 OR sum(r.revenue_events) <> 0 OR sum(r.revenue) <> 0
    ORDER BY 1, 2
    ON CONFLICT (app_id, user_id) DO UPDATE SET events = user_totals.events + excluded.events,
      revenue_events = user_totals.revenue_events + excluded.revenue_events,
      revenue = user_totals.revenue + excluded.revenue
    RETURNING app_id, user_id, events, revenue_events, revenue
  )
  SELECT array_agg(c.app_id), array_agg(c.user_id) INTO v_apps, v_users FROM changed c
  WHERE c.events = 0 AND c.revenue_events = 0 AND c.revenue = 0;
  -- A statement does not see its own changes: the users left with nothing go in the next one.
  IF v_users IS NOT NULL THEN
    DELETE FROM user_totals t USING unnest(v_apps, v_users) z(app_id, user_id)
    WHERE t.app_id = z.app_id AND t.user_id = z.user_id AND t.events = 0 AND t.revenue_events = 0 AND t.revenue = 0;
  END IF;
  RETURN NULL;
END $$;`;
};

const TRIGGERS_SQL = `
CREATE TRIGGER user_days_totals_inserted AFTER INSERT ON user_days
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_user_totals_inserted();
CREATE TRIGGER user_days_totals_updated AFTER UPDATE ON user_days
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_user_totals_updated();
CREATE TRIGGER user_days_totals_deleted AFTER DELETE ON user_days
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_user_totals_deleted();
`;

const FILL_SQL = `
INSERT INTO user_totals (app_id, user_id, events, revenue_events, revenue)
SELECT app_id, user_id, sum(events), sum(revenue_events), sum(revenue) FROM user_days GROUP BY 1, 2
HAVING sum(events) <> 0 OR sum(revenue_events) <> 0 OR sum(revenue) <> 0
ORDER BY 1, 2;
`;

const FUNCTIONS = ['tally_user_totals_inserted()', 'tally_user_totals_updated()', 'tally_user_totals_deleted()'];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(TABLE_SQL);
  await knex.raw(triggerFunction('tally_user_totals_inserted', { new: true }));
  await knex.raw(triggerFunction('tally_user_totals_updated', { old: true, new: true }));
  await knex.raw(triggerFunction('tally_user_totals_deleted', { old: true }));
  await knex.raw(TRIGGERS_SQL);
  await knex.raw(FILL_SQL);
  // Statistics for the planner now (autovacuum may be off, and the embedded database has none).
  await knex.raw('ANALYZE user_totals');
  for (const fn of FUNCTIONS) await knex.raw(`REVOKE ALL ON FUNCTION ${fn} FROM PUBLIC`);
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['inserted', 'updated', 'deleted'])
    await knex.raw(`DROP TRIGGER IF EXISTS user_days_totals_${t} ON user_days`);
  for (const fn of FUNCTIONS) await knex.raw(`DROP FUNCTION IF EXISTS ${fn}`);
  await knex.raw('DROP TABLE IF EXISTS user_totals');
}
