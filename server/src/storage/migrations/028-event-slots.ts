// Per-event rollup (issue 33): how many events of each name, and their revenue, in each 15-minute
// UTC slot, so that questions on named events ("purchases per week", "top 5 events", "events by
// hour of the day") read one row per slot and name instead of every event.
//
// - `event_deltas`: append-only, written by statement triggers on `events` beside the activity
//   rollup's (migration 024): per app, slot and name, the human events a statement stored (and,
//   signed, those an update or delete changed), so no two writers ever wait on each other here.
// - `event_slots`: the folded figures, one row per app, slot and name. A job folds the deltas into
//   it (`tally_event_slots_fold`, keys in (slot, name) order; a row left with no event goes); reads
//   add the deltas not folded yet, so the figures are exact at every moment.
//
// Slots are UTC and 15 minutes long: every UTC offset in use since 1972 is a multiple of 15
// minutes, so a slot lies within one local hour of any zone, and a change of the organization's
// time zone needs no rebuild (a local day, week or hour is a set of whole slots in every zone).
//
// Existing events are counted by a backfill (`tally_event_slots_backfill_step`, run by the job in
// bounded steps of events in time order): each step recounts a range of whole slots from `events`
// and drops the deltas of that range in the same statement, so one snapshot decides what is counted
// (a delta committed after it began is kept, and its event is not in the recount). Questions read
// raw events for an app until its backfill is done (`app_rollups.events_state`).
import type { Knex } from 'knex';

const TABLES_SQL = `
CREATE TABLE event_deltas (
  app_id uuid NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  slot timestamptz NOT NULL,
  event_name text NOT NULL,
  events integer NOT NULL,
  revenue numeric NOT NULL,
  revenue_events integer NOT NULL,
  PRIMARY KEY (app_id, id)
);
CREATE INDEX event_deltas_slot ON event_deltas (app_id, slot);

CREATE TABLE event_slots (
  app_id uuid NOT NULL,
  slot timestamptz NOT NULL,
  event_name text NOT NULL,
  events integer NOT NULL,
  revenue numeric NOT NULL,
  revenue_events integer NOT NULL,
  PRIMARY KEY (app_id, slot, event_name)
);
CREATE INDEX event_slots_name ON event_slots (app_id, event_name, slot) INCLUDE (events, revenue, revenue_events);

ALTER TABLE app_rollups
  ADD COLUMN events_state text NOT NULL DEFAULT 'ready' CHECK (events_state IN ('building', 'ready')),
  ADD COLUMN events_cursor timestamptz,
  ADD COLUMN events_done bigint NOT NULL DEFAULT 0;

-- Apps created since migration 024 get their row on their first fold; give it now (ready: their
-- events all came through the activity triggers), so that the backfill below knows them.
INSERT INTO app_rollups (app_id, time_zone, state)
SELECT a.id, coalesce(nullif(o.timezone, ''), 'UTC'), 'ready'
FROM apps a JOIN organizations o ON o.id = a.organization_id
ON CONFLICT (app_id) DO NOTHING;
-- Apps with events from before this migration are counted by the backfill.
UPDATE app_rollups r SET events_state = 'building'
WHERE EXISTS (SELECT 1 FROM events e WHERE e.app_id = r.app_id);
`;

const SLOT = (column: string) => `date_bin('15 minutes', ${column}, timestamptz '2000-01-01 00:00:00+00')`;

const FUNCTIONS_SQL = `
CREATE FUNCTION tally_event_slots_lock(p_app uuid) RETURNS boolean LANGUAGE sql AS $$
  SELECT pg_try_advisory_xact_lock(hashtextextended('tally_event_slots:' || p_app::text, 0))
$$;

-- Folds up to p_limit of the app's oldest event deltas into event_slots, unless another session
-- holds the app (then -1); rows left with no event go. Returns how many deltas went.
CREATE FUNCTION tally_event_slots_fold(p_app uuid, p_limit integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE v_n integer; v_slots timestamptz[]; v_names text[];
BEGIN
  IF NOT tally_event_slots_lock(p_app) THEN RETURN -1; END IF;
  WITH moved AS (
    DELETE FROM event_deltas d
    WHERE d.app_id = p_app AND d.id IN (SELECT id FROM event_deltas WHERE app_id = p_app ORDER BY id LIMIT p_limit)
    RETURNING d.slot, d.event_name, d.events, d.revenue, d.revenue_events
  ), sums AS (
    SELECT m.slot, m.event_name, sum(m.events)::integer AS events, sum(m.revenue) AS revenue,
           sum(m.revenue_events)::integer AS revenue_events, count(*) AS n
    FROM moved m GROUP BY 1, 2
  ), folded AS (
    INSERT INTO event_slots (app_id, slot, event_name, events, revenue, revenue_events)
    SELECT p_app, s.slot, s.event_name, s.events, s.revenue, s.revenue_events FROM sums s ORDER BY s.slot, s.event_name
    ON CONFLICT (app_id, slot, event_name) DO UPDATE SET
      events = event_slots.events + excluded.events, revenue = event_slots.revenue + excluded.revenue,
      revenue_events = event_slots.revenue_events + excluded.revenue_events
    RETURNING slot, event_name, events
  )
  SELECT coalesce((SELECT sum(n) FROM sums), 0)::integer,
         coalesce(array_agg(f.slot) FILTER (WHERE f.events <= 0), '{}'),
         coalesce(array_agg(f.event_name) FILTER (WHERE f.events <= 0), '{}')
    INTO v_n, v_slots, v_names
  FROM folded f;
  -- A row can only be deleted by a later statement than the one that changed it.
  IF cardinality(v_slots) > 0 THEN
    DELETE FROM event_slots s USING unnest(v_slots, v_names) z(slot, event_name)
    WHERE s.app_id = p_app AND s.slot = z.slot AND s.event_name = z.event_name AND s.events <= 0;
  END IF;
  RETURN v_n;
END $$;

-- One step of an app's backfill: the events of whole slots from the cursor to the slot after the
-- p_batch-th event (or to the end), recounted from events, their deltas dropped in the same
-- statement; when the end is reached the app's event rollup is ready. Returns the events counted
-- in this step (0 when it became or was ready), or -1 when another session holds the app.
CREATE FUNCTION tally_event_slots_backfill_step(p_app uuid, p_batch integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_state text; v_from timestamptz; v_to timestamptz; v_n bigint;
BEGIN
  IF NOT tally_event_slots_lock(p_app) THEN RETURN -1; END IF;
  SELECT events_state, events_cursor INTO v_state, v_from FROM app_rollups WHERE app_id = p_app;
  IF v_state IS DISTINCT FROM 'building' THEN RETURN 0; END IF;
  SELECT ${SLOT('e.created_at')} + interval '15 minutes' INTO v_to FROM events e
  WHERE e.app_id = p_app AND NOT e.is_bot AND (v_from IS NULL OR e.created_at >= v_from)
  ORDER BY e.created_at OFFSET p_batch LIMIT 1;
  WITH fresh AS (
    SELECT ${SLOT('x.created_at')} AS slot, x.event_name, count(*)::integer AS events,
           coalesce(sum(x.r), 0) AS revenue, count(x.r)::integer AS revenue_events
    FROM (SELECT e.created_at, e.event_name, tally_event_revenue(e.properties) AS r FROM events e
          WHERE e.app_id = p_app AND NOT e.is_bot
            AND (v_from IS NULL OR e.created_at >= v_from) AND (v_to IS NULL OR e.created_at < v_to)) x
    GROUP BY 1, 2
  ), dropped AS (
    DELETE FROM event_deltas d WHERE d.app_id = p_app
      AND (v_from IS NULL OR d.slot >= v_from) AND (v_to IS NULL OR d.slot < v_to)
  ), stale AS (
    DELETE FROM event_slots s WHERE s.app_id = p_app
      AND (v_from IS NULL OR s.slot >= v_from) AND (v_to IS NULL OR s.slot < v_to)
      AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.slot = s.slot AND f.event_name = s.event_name)
  ), written AS (
    INSERT INTO event_slots (app_id, slot, event_name, events, revenue, revenue_events)
    SELECT p_app, f.slot, f.event_name, f.events, f.revenue, f.revenue_events FROM fresh f ORDER BY f.slot, f.event_name
    ON CONFLICT (app_id, slot, event_name) DO UPDATE SET
      events = excluded.events, revenue = excluded.revenue, revenue_events = excluded.revenue_events
  )
  SELECT coalesce(sum(f.events), 0) INTO v_n FROM fresh f;
  IF v_to IS NULL THEN
    UPDATE app_rollups SET events_state = 'ready', events_cursor = NULL, events_done = events_done + v_n,
      updated_at = now() WHERE app_id = p_app;
  ELSE
    UPDATE app_rollups SET events_cursor = v_to, events_done = events_done + v_n, updated_at = now()
    WHERE app_id = p_app;
  END IF;
  RETURN greatest(v_n, CASE WHEN v_to IS NULL THEN 0 ELSE 1 END);
END $$;

CREATE FUNCTION tally_event_slots_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_deltas (app_id, slot, event_name, events, revenue, revenue_events)
  SELECT n.app_id, ${SLOT('n.created_at')}, n.event_name, count(*), coalesce(sum(n.r), 0), count(n.r)
  FROM (SELECT x.app_id, x.created_at, x.event_name, tally_event_revenue(x.properties) AS r
        FROM new_rows x WHERE NOT x.is_bot) n
  GROUP BY 1, 2, 3;
  RETURN NULL;
END $$;
`;

// Events deleted or changed: what they counted is taken back with negative deltas (and, for an
// update, their new version counted). A trigger function may only name its own transition tables.
const CHANGED_SQL = (newRows: boolean) => `
CREATE FUNCTION tally_event_slots_${newRows ? 'updated' : 'deleted'}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_deltas (app_id, slot, event_name, events, revenue, revenue_events)
  SELECT c.app_id, ${SLOT('c.created_at')}, c.event_name,
         sum(c.sign), coalesce(sum(c.sign * c.r), 0), coalesce(sum(c.sign) FILTER (WHERE c.r IS NOT NULL), 0)
  FROM (SELECT x.app_id, x.created_at, x.event_name, tally_event_revenue(x.properties) AS r, -1 AS sign
        FROM old_rows x WHERE NOT x.is_bot${
          newRows
            ? `
        UNION ALL
        SELECT x.app_id, x.created_at, x.event_name, tally_event_revenue(x.properties), 1
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
CREATE TRIGGER events_slots_inserted AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_event_slots_inserted();
CREATE TRIGGER events_slots_updated AFTER UPDATE ON events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_event_slots_updated();
CREATE TRIGGER events_slots_deleted AFTER DELETE ON events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_event_slots_deleted();
`;

const FUNCTIONS = [
  'tally_event_slots_lock(uuid)',
  'tally_event_slots_fold(uuid, integer)',
  'tally_event_slots_backfill_step(uuid, integer)',
  'tally_event_slots_inserted()',
  'tally_event_slots_updated()',
  'tally_event_slots_deleted()',
];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(TABLES_SQL);
  await knex.raw(FUNCTIONS_SQL);
  await knex.raw(CHANGED_SQL(true));
  await knex.raw(CHANGED_SQL(false));
  await knex.raw(TRIGGERS_SQL);
  for (const fn of FUNCTIONS) await knex.raw(`REVOKE ALL ON FUNCTION ${fn} FROM PUBLIC`);
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['inserted', 'updated', 'deleted'])
    await knex.raw(`DROP TRIGGER IF EXISTS events_slots_${t} ON events`);
  for (const fn of [...FUNCTIONS].reverse()) await knex.raw(`DROP FUNCTION IF EXISTS ${fn}`);
  await knex.raw('ALTER TABLE app_rollups DROP COLUMN IF EXISTS events_state, DROP COLUMN IF EXISTS events_cursor');
  await knex.raw('ALTER TABLE app_rollups DROP COLUMN IF EXISTS events_done');
  await knex.raw('DROP TABLE IF EXISTS event_slots, event_deltas');
}
