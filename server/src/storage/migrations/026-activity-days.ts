// Per-app daily figures over the activity rollup (issue 33), so that the metrics that need only
// daily counts read one row a day instead of one row a user and day:
//
// - `app_days`: per app and local day, the users active (a `user_days` row with events), the users
//   paying (with events carrying revenue) and the revenue of that day's rows that carry revenue.
// - `app_periods`: per app and calendar week (from Monday) or month of local days, the users
//   active and the users paying (distinct users, which daily counts cannot add up to), the users
//   active in it and in the next one (churn), and the users whose first active period it is and
//   how many of them are active in the next one (retention). `app_days` has the same first-day
//   figures per day.
// - `app_day_gaps`: per app, local day `day` and gap g (1 to 29 days), how many users were active
//   on `day` and next active g days later (consecutive active days of one user). With `app_days`
//   this gives the users active in any window of up to 30 days without reading users one by one:
//   a user with k active days in a window is counted k times by the daily counts and has k - 1
//   consecutive pairs inside it (see analytics/queries/rollup-days.ts).
//
// Both are kept by statement triggers on `user_days`, from the rows each statement changed, so
// every path that writes `user_days` (the fold, the rebuild, its recounts and clean-up) keeps them
// exact in the same transaction. Only one session writes an app's `user_days` at a time (the
// rollup's advisory lock), so these rows are never contended. A user whose set of active days
// changed has their consecutive pairs counted again, from the set last counted (kept in
// `user_active_days`) to the set now: once a user and day at most (the first event of a day, or a
// day emptied by a deletion).
import type { Knex } from 'knex';

/** Longest window, in days, the gaps table answers (the rolling monthly window). */
export const LONGEST_WINDOW_DAYS = 30;

const SQL = `
CREATE TABLE app_days (
  app_id uuid NOT NULL,
  day date NOT NULL,
  active integer NOT NULL DEFAULT 0,
  paying integer NOT NULL DEFAULT 0,
  revenue numeric NOT NULL DEFAULT 0,
  first_users integer NOT NULL DEFAULT 0,
  first_next integer NOT NULL DEFAULT 0,
  PRIMARY KEY (app_id, day)
);

-- Each user's active days as the gaps table last counted them (kept for the triggers only).
CREATE TABLE user_active_days (
  app_id uuid NOT NULL,
  user_id uuid NOT NULL,
  days date[] NOT NULL,
  paying date[] NOT NULL,
  PRIMARY KEY (app_id, user_id)
);

-- Users active, and paying, per app and calendar week (from Monday) or month of local days.
CREATE TABLE app_periods (
  app_id uuid NOT NULL,
  unit text NOT NULL CHECK (unit IN ('week', 'month')),
  start date NOT NULL,
  active integer NOT NULL DEFAULT 0,
  paying integer NOT NULL DEFAULT 0,
  continued integer NOT NULL DEFAULT 0,
  first_users integer NOT NULL DEFAULT 0,
  first_next integer NOT NULL DEFAULT 0,
  PRIMARY KEY (app_id, unit, start)
);

CREATE TABLE app_day_gaps (
  app_id uuid NOT NULL,
  day date NOT NULL,
  gap smallint NOT NULL,
  pairs integer NOT NULL,
  PRIMARY KEY (app_id, day, gap)
);

-- Applies signed changes of user_days rows: each element is one row's contribution, added
-- (a row inserted, or an update's new version) or taken back (deleted, or an update's old one).
CREATE FUNCTION tally_rollup_days_apply(p_apps uuid[], p_days date[], p_users uuid[], p_active integer[],
  p_paying integer[], p_revenue numeric[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO app_days (app_id, day, active, paying, revenue)
  SELECT c.app_id, c.day, sum(c.active), sum(c.paying), sum(c.revenue)
  FROM unnest(p_apps, p_days, p_users, p_active, p_paying, p_revenue) c(app_id, day, user_id, active, paying, revenue)
  GROUP BY 1, 2
  HAVING sum(c.active) <> 0 OR sum(c.paying) <> 0 OR sum(c.revenue) <> 0
  ORDER BY 1, 2
  ON CONFLICT (app_id, day) DO UPDATE SET active = app_days.active + excluded.active,
    paying = app_days.paying + excluded.paying, revenue = app_days.revenue + excluded.revenue;

  -- Users whose set of active days changed: their consecutive pairs, from the set kept in
  -- user_active_days (as of the last change) to the set user_days holds now. Comparing with the
  -- kept set, not with this statement's own rows, keeps it exact when one statement fires several
  -- triggers (an upsert fires the insert and the update trigger, each seeing the final rows).
  WITH moved AS (
    SELECT DISTINCT c.app_id, c.user_id
    FROM unnest(p_apps, p_days, p_users, p_active, p_paying) c(app_id, day, user_id, active, paying)
    GROUP BY c.app_id, c.user_id, c.day HAVING sum(c.active) <> 0 OR sum(c.paying) <> 0
  ), now_sets AS (
    SELECT m.app_id, m.user_id,
      coalesce((SELECT array_agg(u.day ORDER BY u.day) FROM user_days u
        WHERE u.app_id = m.app_id AND u.user_id = m.user_id AND u.events > 0), '{}') AS days,
      coalesce((SELECT array_agg(u.day ORDER BY u.day) FROM user_days u
        WHERE u.app_id = m.app_id AND u.user_id = m.user_id AND u.revenue_events > 0), '{}') AS paying
    FROM moved m
  ), kept_sets AS (
    SELECT m.app_id, m.user_id, coalesce(k.days, '{}') AS days, coalesce(k.paying, '{}') AS paying
    FROM moved m LEFT JOIN user_active_days k ON k.app_id = m.app_id AND k.user_id = m.user_id
  ), both_sets AS (
    SELECT app_id, user_id, days, paying, 1 AS sign FROM now_sets
    UNION ALL SELECT app_id, user_id, days, paying, -1 FROM kept_sets
  ), changes AS (
    SELECT app_id, day, gap, sum(sign)::integer AS pairs FROM (
      SELECT s.app_id, lag(d) OVER w AS day, d - lag(d) OVER w AS gap, s.sign
        FROM both_sets s, unnest(s.days) d WINDOW w AS (PARTITION BY s.app_id, s.user_id, s.sign ORDER BY d)
    ) p WHERE gap < ${LONGEST_WINDOW_DAYS} GROUP BY 1, 2, 3 HAVING sum(sign) <> 0
  ), period_sets AS (
    SELECT DISTINCT s.app_id, s.user_id, s.sign, x.paid, u.unit, date_trunc(u.unit, x.d::timestamp)::date AS start
    FROM both_sets s
    CROSS JOIN LATERAL (SELECT d, false AS paid FROM unnest(s.days) d
                        UNION ALL SELECT d, true FROM unnest(s.paying) d) x
    CROSS JOIN (VALUES ('week'), ('month')) u(unit)
  ), period_flags AS (
    SELECT app_id, unit, start, sign, paid, row_number() OVER w = 1 AS first,
           coalesce(lead(start) OVER w = (start + ('1 ' || unit)::interval)::date, false) AS cont
    FROM period_sets WINDOW w AS (PARTITION BY app_id, user_id, sign, paid, unit ORDER BY start)
  ), period_changes AS (
    SELECT app_id, unit, start,
      coalesce(sum(sign) FILTER (WHERE NOT paid), 0)::integer AS active,
      coalesce(sum(sign) FILTER (WHERE paid), 0)::integer AS paying,
      coalesce(sum(sign) FILTER (WHERE NOT paid AND cont), 0)::integer AS continued,
      coalesce(sum(sign) FILTER (WHERE NOT paid AND first), 0)::integer AS first_users,
      coalesce(sum(sign) FILTER (WHERE NOT paid AND first AND cont), 0)::integer AS first_next
    FROM period_flags GROUP BY 1, 2, 3
  ), periods AS (
    INSERT INTO app_periods (app_id, unit, start, active, paying, continued, first_users, first_next)
    SELECT * FROM period_changes
    WHERE active <> 0 OR paying <> 0 OR continued <> 0 OR first_users <> 0 OR first_next <> 0 ORDER BY 1, 2, 3
    ON CONFLICT (app_id, unit, start) DO UPDATE SET active = app_periods.active + excluded.active,
      paying = app_periods.paying + excluded.paying, continued = app_periods.continued + excluded.continued,
      first_users = app_periods.first_users + excluded.first_users,
      first_next = app_periods.first_next + excluded.first_next
  ), day_firsts AS (
    SELECT app_id, days[1] AS day, sum(sign)::integer AS first_users,
           coalesce(sum(sign) FILTER (WHERE days[1] + 1 = ANY (days)), 0)::integer AS first_next
    FROM both_sets WHERE cardinality(days) > 0 GROUP BY 1, 2
  ), firsts AS (
    INSERT INTO app_days (app_id, day, first_users, first_next)
    SELECT * FROM day_firsts WHERE first_users <> 0 OR first_next <> 0 ORDER BY 1, 2
    ON CONFLICT (app_id, day) DO UPDATE SET first_users = app_days.first_users + excluded.first_users,
      first_next = app_days.first_next + excluded.first_next
  ), gaps AS (
    INSERT INTO app_day_gaps (app_id, day, gap, pairs)
    SELECT app_id, day, gap, pairs FROM changes ORDER BY 1, 2, 3
    ON CONFLICT (app_id, day, gap) DO UPDATE SET pairs = app_day_gaps.pairs + excluded.pairs
  ), gone AS (
    DELETE FROM user_active_days k USING now_sets s
    WHERE k.app_id = s.app_id AND k.user_id = s.user_id AND cardinality(s.days) = 0
  )
  INSERT INTO user_active_days (app_id, user_id, days, paying)
  SELECT app_id, user_id, days, paying FROM now_sets WHERE cardinality(days) > 0 ORDER BY 1, 2
  ON CONFLICT (app_id, user_id) DO UPDATE SET days = excluded.days, paying = excluded.paying;
END $$;
`;

/** A statement trigger's call of the apply function over its transition tables (old taken back, new added). */
const triggerFunction = (name: string, tables: { old?: boolean; new?: boolean }) => {
  const parts = [
    ...(tables.new ? ['SELECT app_id, day, user_id, 1 AS sign, events, revenue_events, revenue FROM new_rows'] : []),
    ...(tables.old ? ['SELECT app_id, day, user_id, -1 AS sign, events, revenue_events, revenue FROM old_rows'] : []),
  ];
  return `
CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tally_rollup_days_apply(array_agg(r.app_id), array_agg(r.day), array_agg(r.user_id),
    array_agg(r.sign * (r.events > 0)::integer), array_agg(r.sign * (r.revenue_events > 0)::integer),
    array_agg(CASE WHEN r.revenue_events <> 0 THEN r.sign * r.revenue ELSE 0 END))
  FROM (${parts.join(' UNION ALL ')}) r
  HAVING count(*) > 0;
  RETURN NULL;
END $$;`;
};

const TRIGGERS_SQL = `
CREATE TRIGGER user_days_inserted AFTER INSERT ON user_days
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_user_days_inserted();
CREATE TRIGGER user_days_updated AFTER UPDATE ON user_days
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_user_days_updated();
CREATE TRIGGER user_days_deleted AFTER DELETE ON user_days
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_user_days_deleted();
`;

// What user_days already holds (rollups folded or rebuilt before this migration): every row
// applied as if just inserted, onto empty tables.
const FILL_SQL = `
SELECT tally_rollup_days_apply(array_agg(app_id), array_agg(day), array_agg(user_id),
  array_agg((events > 0)::integer), array_agg((revenue_events > 0)::integer),
  array_agg(CASE WHEN revenue_events <> 0 THEN revenue ELSE 0 END))
FROM user_days HAVING count(*) > 0;
`;

const FUNCTIONS = [
  'tally_rollup_days_apply(uuid[], date[], uuid[], integer[], integer[], numeric[])',
  'tally_user_days_inserted()',
  'tally_user_days_updated()',
  'tally_user_days_deleted()',
];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(SQL);
  await knex.raw(triggerFunction('tally_user_days_inserted', { new: true }));
  await knex.raw(triggerFunction('tally_user_days_updated', { old: true, new: true }));
  await knex.raw(triggerFunction('tally_user_days_deleted', { old: true }));
  await knex.raw(TRIGGERS_SQL);
  await knex.raw(FILL_SQL);
  for (const fn of FUNCTIONS) await knex.raw(`REVOKE ALL ON FUNCTION ${fn} FROM PUBLIC`);
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['inserted', 'updated', 'deleted'])
    await knex.raw(`DROP TRIGGER IF EXISTS user_days_${t} ON user_days`);
  for (const fn of [...FUNCTIONS].reverse()) await knex.raw(`DROP FUNCTION IF EXISTS ${fn}`);
  await knex.raw('DROP TABLE IF EXISTS app_day_gaps, app_periods, user_active_days, app_days');
}
