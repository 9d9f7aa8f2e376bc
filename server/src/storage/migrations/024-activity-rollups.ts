// Activity rollups (issue 33): what the metrics read instead of raw events, kept exact.
//
// - `activity_deltas`: append-only. Every statement that inserts events (ingestion's one call a
//   group, the demo seeder, a COPY) adds, through a statement trigger, one row per user and
//   15-minute UTC slot of the human events it stored: count, revenue, events carrying revenue,
//   first and last time. Insert-only rows, never an update of a shared row, so concurrent groups
//   never wait on each other here.
// - `user_days`: one row per app, local day (in the rollup's time zone) and user: the same figures
//   plus a bit mask of the local hours the user was active in. A job folds the deltas into it
//   (`tally_rollup_fold`, keys in (day, user) order); reads add the deltas not yet folded, so the
//   figures are exact at every moment. Every UTC offset in use since 1972 is a multiple of 15
//   minutes, so a slot lies within one local hour and one local day of any zone.
// - `app_rollups`: per app, the time zone the rollup is kept in and whether it is `ready` or
//   `building` (being rebuilt user by user: after this migration, for existing events, or after the
//   organization's time zone changed); metrics read raw events until it is ready again.
//
// History that changes (erasure, retention deletes, an identify merge moving events to another
// user, any later UPDATE or DELETE of events) is caught by statement triggers too: the rows of
// the users and days touched are recomputed from the remaining events in the same transaction
// (`tally_rollup_recompute`). The fold, the recompute and the rebuild of one app take the same
// transaction-scoped advisory lock, so they never interleave; ingestion takes none.
import type { Knex } from 'knex';

const SQL = `
CREATE FUNCTION tally_event_revenue(p jsonb) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(
    CASE WHEN jsonb_typeof(p->'revenue') = 'number' THEN (p->>'revenue')::numeric END,
    CASE WHEN jsonb_typeof(p->'amount') = 'number' THEN (p->>'amount')::numeric END)
$$;

CREATE TABLE activity_deltas (
  app_id uuid NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  user_id uuid NOT NULL,
  slot timestamptz NOT NULL,
  events integer NOT NULL,
  revenue numeric NOT NULL,
  revenue_events integer NOT NULL,
  first_at timestamptz NOT NULL,
  last_at timestamptz NOT NULL,
  PRIMARY KEY (app_id, id)
);
CREATE INDEX activity_deltas_user ON activity_deltas (app_id, user_id);

CREATE TABLE user_days (
  app_id uuid NOT NULL,
  day date NOT NULL,
  user_id uuid NOT NULL,
  events integer NOT NULL,
  revenue numeric NOT NULL,
  revenue_events integer NOT NULL,
  first_at timestamptz NOT NULL,
  last_at timestamptz NOT NULL,
  hours integer NOT NULL,
  PRIMARY KEY (app_id, day, user_id)
);
CREATE INDEX user_days_user ON user_days (app_id, user_id, day);

CREATE TABLE app_rollups (
  app_id uuid PRIMARY KEY,
  time_zone text NOT NULL,
  state text NOT NULL CHECK (state IN ('building', 'ready')),
  cursor uuid,
  users_done integer NOT NULL DEFAULT 0,
  started_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Every app that exists now has events written before the triggers: rebuilt by the job.
INSERT INTO app_rollups (app_id, time_zone, state)
SELECT a.id, coalesce(nullif(o.timezone, ''), 'UTC'), 'building'
FROM apps a JOIN organizations o ON o.id = a.organization_id;

-- The rollup's time zone of an app; an app created after this migration gets its row (ready:
-- every one of its events came through the triggers) in its organization's zone.
CREATE FUNCTION tally_rollup_zone(p_app uuid) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_tz text;
BEGIN
  SELECT time_zone INTO v_tz FROM app_rollups WHERE app_id = p_app;
  IF v_tz IS NULL THEN
    INSERT INTO app_rollups (app_id, time_zone, state)
    SELECT a.id, coalesce(nullif(o.timezone, ''), 'UTC'), 'ready'
    FROM apps a JOIN organizations o ON o.id = a.organization_id WHERE a.id = p_app
    ON CONFLICT (app_id) DO NOTHING;
    SELECT time_zone INTO v_tz FROM app_rollups WHERE app_id = p_app;
  END IF;
  RETURN coalesce(v_tz, 'UTC');
END $$;

CREATE FUNCTION tally_rollup_lock(p_app uuid, p_wait boolean) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF p_wait THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('tally_rollup:' || p_app::text, 0));
    RETURN true;
  END IF;
  RETURN pg_try_advisory_xact_lock(hashtextextended('tally_rollup:' || p_app::text, 0));
END $$;

-- Recomputes, from the app's remaining events, the rows of these users for the local days that
-- hold [p_lo, p_hi] (every day when null), and drops their deltas of those days (the events they
-- counted are in the recount). One statement, one snapshot: a delta committed after it began is
-- kept, and so is its event left out of the recount.
CREATE FUNCTION tally_rollup_recompute(p_app uuid, p_users uuid[], p_lo timestamptz, p_hi timestamptz)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE v_tz text; v_dlo date; v_dhi date;
BEGIN
  PERFORM tally_rollup_lock(p_app, true);
  v_tz := tally_rollup_zone(p_app);
  IF p_lo IS NOT NULL THEN
    v_dlo := (p_lo AT TIME ZONE v_tz)::date;
    v_dhi := (p_hi AT TIME ZONE v_tz)::date;
  END IF;
  WITH fresh AS (
    SELECT (e.created_at AT TIME ZONE v_tz)::date AS day, e.user_id, count(*)::integer AS events,
           coalesce(sum(e.r), 0) AS revenue, count(e.r)::integer AS revenue_events,
           min(e.created_at) AS first_at, max(e.created_at) AS last_at,
           bit_or(1 << extract(hour FROM e.created_at AT TIME ZONE v_tz)::integer) AS hours
    FROM (SELECT x.user_id, x.created_at, tally_event_revenue(x.properties) AS r FROM events x
          WHERE x.app_id = p_app AND x.user_id = ANY (p_users) AND NOT x.is_bot
            AND (v_dlo IS NULL OR (x.created_at >= (v_dlo::timestamp AT TIME ZONE v_tz)
                                   AND x.created_at < ((v_dhi + 1)::timestamp AT TIME ZONE v_tz)))) e
    GROUP BY 1, 2
  ), dropped AS (
    DELETE FROM activity_deltas d
    WHERE d.app_id = p_app AND d.user_id = ANY (p_users)
      AND (v_dlo IS NULL OR (d.slot AT TIME ZONE v_tz)::date BETWEEN v_dlo AND v_dhi)
  ), stale AS (
    DELETE FROM user_days u
    WHERE u.app_id = p_app AND u.user_id = ANY (p_users) AND (v_dlo IS NULL OR u.day BETWEEN v_dlo AND v_dhi)
      AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.day = u.day AND f.user_id = u.user_id)
  )
  INSERT INTO user_days (app_id, day, user_id, events, revenue, revenue_events, first_at, last_at, hours)
  SELECT p_app, f.day, f.user_id, f.events, f.revenue, f.revenue_events, f.first_at, f.last_at, f.hours
  FROM fresh f ORDER BY f.day, f.user_id
  ON CONFLICT (app_id, day, user_id) DO UPDATE SET
    events = excluded.events, revenue = excluded.revenue, revenue_events = excluded.revenue_events,
    first_at = excluded.first_at, last_at = excluded.last_at, hours = excluded.hours;
END $$;

-- Folds up to p_limit of the app's oldest deltas into user_days, unless another session holds
-- the app (then -1). Returns how many deltas went.
CREATE FUNCTION tally_rollup_fold(p_app uuid, p_limit integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE v_tz text; v_n integer;
BEGIN
  IF NOT tally_rollup_lock(p_app, false) THEN RETURN -1; END IF;
  v_tz := tally_rollup_zone(p_app);
  WITH moved AS (
    DELETE FROM activity_deltas d
    WHERE d.app_id = p_app AND d.id IN (SELECT id FROM activity_deltas WHERE app_id = p_app ORDER BY id LIMIT p_limit)
    RETURNING d.user_id, d.slot, d.events, d.revenue, d.revenue_events, d.first_at, d.last_at
  ), counted AS (
    SELECT count(*)::integer AS n FROM moved
  ), folded AS (
    INSERT INTO user_days (app_id, day, user_id, events, revenue, revenue_events, first_at, last_at, hours)
    SELECT p_app, (m.slot AT TIME ZONE v_tz)::date, m.user_id, sum(m.events)::integer, sum(m.revenue),
           sum(m.revenue_events)::integer, min(m.first_at), max(m.last_at),
           bit_or(1 << extract(hour FROM m.slot AT TIME ZONE v_tz)::integer)
    FROM moved m GROUP BY 2, 3 ORDER BY 2, 3
    ON CONFLICT (app_id, day, user_id) DO UPDATE SET
      events = user_days.events + excluded.events, revenue = user_days.revenue + excluded.revenue,
      revenue_events = user_days.revenue_events + excluded.revenue_events,
      first_at = least(user_days.first_at, excluded.first_at), last_at = greatest(user_days.last_at, excluded.last_at),
      hours = user_days.hours | excluded.hours
    RETURNING 1
  )
  SELECT n INTO v_n FROM counted, (SELECT count(*) FROM folded) f;
  RETURN v_n;
END $$;

-- One step of an app's rebuild: the next p_batch users (in id order) recomputed whole; when none
-- is left, the rollup is ready. Returns the users done in this step, or -1 when another session
-- holds the app.
CREATE FUNCTION tally_rollup_rebuild_step(p_app uuid, p_batch integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE v_state app_rollups%ROWTYPE; v_users uuid[];
BEGIN
  IF NOT tally_rollup_lock(p_app, false) THEN RETURN -1; END IF;
  PERFORM tally_rollup_zone(p_app);
  SELECT * INTO v_state FROM app_rollups WHERE app_id = p_app;
  IF v_state.state <> 'building' THEN RETURN 0; END IF;
  SELECT coalesce(array_agg(id ORDER BY id), '{}') INTO v_users FROM (
    SELECT u.id FROM users u WHERE u.app_id = p_app AND (v_state.cursor IS NULL OR u.id > v_state.cursor)
    ORDER BY u.id LIMIT p_batch) s;
  IF cardinality(v_users) = 0 THEN
    -- Rows of users who no longer exist (none should be left: their events' deletion recounted them).
    DELETE FROM user_days u WHERE u.app_id = p_app
      AND NOT EXISTS (SELECT 1 FROM users x WHERE x.app_id = p_app AND x.id = u.user_id);
    UPDATE app_rollups SET state = 'ready', cursor = NULL, updated_at = now() WHERE app_id = p_app;
    RETURN 0;
  END IF;
  PERFORM tally_rollup_recompute(p_app, v_users, NULL, NULL);
  UPDATE app_rollups SET cursor = v_users[cardinality(v_users)], users_done = users_done + cardinality(v_users),
    updated_at = now() WHERE app_id = p_app;
  RETURN cardinality(v_users);
END $$;

-- Starts a rebuild of the app's rollup in time zone p_tz (its organization's zone changed).
CREATE FUNCTION tally_rollup_restart(p_app uuid, p_tz text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM tally_rollup_lock(p_app, true);
  PERFORM tally_rollup_zone(p_app);
  UPDATE app_rollups SET time_zone = p_tz, state = 'building', cursor = NULL, users_done = 0,
    started_at = now(), updated_at = now() WHERE app_id = p_app;
END $$;

CREATE FUNCTION tally_events_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_deltas (app_id, user_id, slot, events, revenue, revenue_events, first_at, last_at)
  SELECT n.app_id, n.user_id, date_bin('15 minutes', n.created_at, timestamptz '2000-01-01 00:00:00+00'),
         count(*), coalesce(sum(n.r), 0), count(n.r), min(n.created_at), max(n.created_at)
  FROM (SELECT x.app_id, x.user_id, x.created_at, tally_event_revenue(x.properties) AS r
        FROM new_rows x WHERE NOT x.is_bot) n
  GROUP BY 1, 2, 3;
  RETURN NULL;
END $$;

`;

// Events deleted or changed: the users and days they were in are recounted, per app. (A trigger
// function may only name the transition tables its trigger has: one for UPDATE, one for DELETE.)
const CHANGED_SQL = (newRows: boolean) => `
CREATE FUNCTION tally_events_${newRows ? 'updated' : 'deleted'}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  FOR r IN
    SELECT c.app_id, array_agg(DISTINCT c.user_id ORDER BY c.user_id) AS users, min(c.created_at) AS lo, max(c.created_at) AS hi
    FROM (SELECT app_id, user_id, created_at FROM old_rows${
      newRows ? ' UNION ALL SELECT app_id, user_id, created_at FROM new_rows' : ''
    }) c
    GROUP BY c.app_id ORDER BY c.app_id
  LOOP
    PERFORM tally_rollup_recompute(r.app_id, r.users, r.lo, r.hi);
  END LOOP;
  RETURN NULL;
END $$;
`;

const TRIGGERS_SQL = `
CREATE TRIGGER events_rollup_inserted AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_events_inserted();
CREATE TRIGGER events_rollup_updated AFTER UPDATE ON events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_events_updated();
CREATE TRIGGER events_rollup_deleted AFTER DELETE ON events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_events_deleted();
`;

const FUNCTIONS = [
  'tally_event_revenue(jsonb)',
  'tally_rollup_zone(uuid)',
  'tally_rollup_lock(uuid, boolean)',
  'tally_rollup_recompute(uuid, uuid[], timestamptz, timestamptz)',
  'tally_rollup_fold(uuid, integer)',
  'tally_rollup_rebuild_step(uuid, integer)',
  'tally_rollup_restart(uuid, text)',
  'tally_events_inserted()',
  'tally_events_updated()',
  'tally_events_deleted()',
];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(SQL);
  await knex.raw(CHANGED_SQL(true));
  await knex.raw(CHANGED_SQL(false));
  await knex.raw(TRIGGERS_SQL);
  for (const fn of FUNCTIONS) await knex.raw(`REVOKE ALL ON FUNCTION ${fn} FROM PUBLIC`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TRIGGER IF EXISTS events_rollup_inserted ON events');
  await knex.raw('DROP TRIGGER IF EXISTS events_rollup_updated ON events');
  await knex.raw('DROP TRIGGER IF EXISTS events_rollup_deleted ON events');
  for (const fn of [...FUNCTIONS].reverse()) await knex.raw(`DROP FUNCTION IF EXISTS ${fn}`);
  await knex.raw('DROP TABLE IF EXISTS app_rollups, user_days, activity_deltas');
}
