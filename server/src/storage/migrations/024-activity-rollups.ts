// Activity rollups (issue 33): what the metrics read instead of raw events, kept exact.
//
// - `activity_deltas`: append-only. Every statement that inserts events (ingestion's one call a
//   group, the demo seeder, a COPY) adds, through a statement trigger, one row per user and
//   15-minute UTC slot of the human events it stored: count, revenue, events carrying revenue,
//   first and last time. Insert-only rows, never an update of a shared row, so concurrent groups
//   never wait on each other here.
// - `user_days`: one row per app, local day (in the rollup's time zone) and user with at least one
//   event: the same figures. A job folds the deltas into it (`tally_rollup_fold`, keys in (day,
//   user) order; a row whose count falls to zero goes); reads add the deltas not yet folded, so
//   the figures are exact at every moment. Every UTC offset in use since 1972 is a multiple of 15
//   minutes, so a slot lies within one local day of any zone.
// - `app_rollups`: per app, the time zone the rollup is kept in and whether it is `ready` or
//   `building` (being rebuilt user by user: after this migration, for existing events, or after the
//   organization's time zone changed); metrics read raw events until it is ready again.
//
// History that changes (erasure, retention deletes, an identify merge moving events to another
// user, any later UPDATE or DELETE of events) is caught by statement triggers too, which add
// negative deltas for the events that went (and positive ones for their new version): every
// figure the rollup keeps is a sum, so a deletion is exact the moment it commits, and no writer of
// events ever waits on the rollup. The fold and the rebuild of one app take a transaction-scoped
// advisory lock, and only with a try: they never interleave, and nothing waits on them.
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

-- Recounts, from the app's events, every row of these users, and drops their deltas (the events
-- they counted are in the recount). One statement, one snapshot: a delta committed after it began
-- is kept, and its event (or its deletion) is not in the recount. Called by the rebuild only,
-- which holds the app's lock.
CREATE FUNCTION tally_rollup_recount(p_app uuid, p_users uuid[], p_tz text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  WITH fresh AS (
    SELECT (e.created_at AT TIME ZONE p_tz)::date AS day, e.user_id, count(*)::integer AS events,
           coalesce(sum(e.r), 0) AS revenue, count(e.r)::integer AS revenue_events
    FROM (SELECT x.user_id, x.created_at, tally_event_revenue(x.properties) AS r FROM events x
          WHERE x.app_id = p_app AND x.user_id = ANY (p_users) AND NOT x.is_bot) e
    GROUP BY 1, 2
  ), dropped AS (
    DELETE FROM activity_deltas d WHERE d.app_id = p_app AND d.user_id = ANY (p_users)
  ), stale AS (
    DELETE FROM user_days u
    WHERE u.app_id = p_app AND u.user_id = ANY (p_users)
      AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.day = u.day AND f.user_id = u.user_id)
  )
  INSERT INTO user_days (app_id, day, user_id, events, revenue, revenue_events)
  SELECT p_app, f.day, f.user_id, f.events, f.revenue, f.revenue_events
  FROM fresh f ORDER BY f.day, f.user_id
  ON CONFLICT (app_id, day, user_id) DO UPDATE SET
    events = excluded.events, revenue = excluded.revenue, revenue_events = excluded.revenue_events;
END $$;

-- Folds up to p_limit of the app's oldest deltas into user_days, unless another session holds
-- the app (then -1); rows left with no event go. Returns how many deltas went.
CREATE FUNCTION tally_rollup_fold(p_app uuid, p_limit integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE v_tz text; v_n integer; v_days date[]; v_users uuid[];
BEGIN
  IF NOT tally_rollup_lock(p_app, false) THEN RETURN -1; END IF;
  v_tz := tally_rollup_zone(p_app);
  WITH moved AS (
    DELETE FROM activity_deltas d
    WHERE d.app_id = p_app AND d.id IN (SELECT id FROM activity_deltas WHERE app_id = p_app ORDER BY id LIMIT p_limit)
    RETURNING d.user_id, d.slot, d.events, d.revenue, d.revenue_events
  ), sums AS (
    SELECT (m.slot AT TIME ZONE v_tz)::date AS day, m.user_id, sum(m.events)::integer AS events,
           sum(m.revenue) AS revenue, sum(m.revenue_events)::integer AS revenue_events, count(*) AS n
    FROM moved m GROUP BY 1, 2
  ), folded AS (
    INSERT INTO user_days (app_id, day, user_id, events, revenue, revenue_events)
    SELECT p_app, s.day, s.user_id, s.events, s.revenue, s.revenue_events FROM sums s ORDER BY s.day, s.user_id
    ON CONFLICT (app_id, day, user_id) DO UPDATE SET
      events = user_days.events + excluded.events, revenue = user_days.revenue + excluded.revenue,
      revenue_events = user_days.revenue_events + excluded.revenue_events
    RETURNING day, user_id, events
  )
  SELECT coalesce((SELECT sum(n) FROM sums), 0)::integer,
         coalesce(array_agg(f.day) FILTER (WHERE f.events <= 0), '{}'),
         coalesce(array_agg(f.user_id) FILTER (WHERE f.events <= 0), '{}')
    INTO v_n, v_days, v_users
  FROM folded f;
  IF cardinality(v_days) > 0 THEN
    DELETE FROM user_days u USING unnest(v_days, v_users) z(day, user_id)
    WHERE u.app_id = p_app AND u.day = z.day AND u.user_id = z.user_id AND u.events <= 0;
  END IF;
  RETURN v_n;
END $$;

-- One step of an app's rebuild: the next p_batch users (in id order) recounted whole; when none
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
    -- Rows and deltas of users who no longer exist (erased, or merged into another): what is left
    -- of them sums to nothing, but rows from before the rebuild were never recounted.
    DELETE FROM user_days u WHERE u.app_id = p_app
      AND NOT EXISTS (SELECT 1 FROM users x WHERE x.app_id = p_app AND x.id = u.user_id);
    DELETE FROM activity_deltas d WHERE d.app_id = p_app
      AND NOT EXISTS (SELECT 1 FROM users x WHERE x.app_id = p_app AND x.id = d.user_id);
    UPDATE app_rollups SET state = 'ready', cursor = NULL, updated_at = now() WHERE app_id = p_app;
    RETURN 0;
  END IF;
  PERFORM tally_rollup_recount(p_app, v_users, v_state.time_zone);
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
  INSERT INTO activity_deltas (app_id, user_id, slot, events, revenue, revenue_events)
  SELECT n.app_id, n.user_id, date_bin('15 minutes', n.created_at, timestamptz '2000-01-01 00:00:00+00'),
         count(*), coalesce(sum(n.r), 0), count(n.r)
  FROM (SELECT x.app_id, x.user_id, x.created_at, tally_event_revenue(x.properties) AS r
        FROM new_rows x WHERE NOT x.is_bot) n
  GROUP BY 1, 2, 3;
  RETURN NULL;
END $$;
`;

// Events deleted or changed: what they counted is taken back with negative deltas (and, for an
// update, their new version counted). A trigger function may only name the transition tables its
// trigger has: one function for UPDATE, one for DELETE.
const CHANGED_SQL = (newRows: boolean) => `
CREATE FUNCTION tally_events_${newRows ? 'updated' : 'deleted'}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO activity_deltas (app_id, user_id, slot, events, revenue, revenue_events)
  SELECT c.app_id, c.user_id, date_bin('15 minutes', c.created_at, timestamptz '2000-01-01 00:00:00+00'),
         sum(c.sign), coalesce(sum(c.sign * c.r), 0), coalesce(sum(c.sign) FILTER (WHERE c.r IS NOT NULL), 0)
  FROM (SELECT x.app_id, x.user_id, x.created_at, tally_event_revenue(x.properties) AS r, -1 AS sign
        FROM old_rows x WHERE NOT x.is_bot${
          newRows
            ? `
        UNION ALL
        SELECT x.app_id, x.user_id, x.created_at, tally_event_revenue(x.properties), 1
        FROM new_rows x WHERE NOT x.is_bot`
            : ''
        }) c
  GROUP BY 1, 2, 3
  HAVING sum(c.sign) <> 0 OR coalesce(sum(c.sign * c.r), 0) <> 0
      OR coalesce(sum(c.sign) FILTER (WHERE c.r IS NOT NULL), 0) <> 0;
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
  'tally_rollup_recount(uuid, uuid[], text)',
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
