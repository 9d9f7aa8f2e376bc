// Per-property rollup (issue 33): for each app, 15-minute UTC slot, event name and property key,
// how many human events carried the key with a value of each JSON type, and the count, sum,
// smallest and largest of its numeric values. The event trend's property figures (GET
// /mcp/analytics/events/:eventName) read one row per slot and key instead of expanding every
// event's properties (at ten million events, 1.6 million key-value rows for one month of one name).
//
// - `property_deltas`: append-only, written by statement triggers on `events` beside the other
//   rollups': what a statement stored, signed. A delete (erasure, retention, a deleted app) or an
//   update that moves an event takes its counts and sums back exactly, but a smallest or largest
//   value cannot be taken back: such a delta is marked `recheck`, and its slot's figures for that
//   name are recounted from raw events, by readers until the fold has done it for good.
// - `property_slots`: the folded figures. The fold (`tally_property_slots_fold`) recounts the
//   rechecked slots from events, then adds the other deltas (keys in order); reads add the deltas
//   not folded yet, so the figures are exact at every moment.
//
// Existing events are counted by a backfill in bounded steps, as the per-event rollup's
// (migration 028); the event trend reads raw events for an app until it is done
// (`app_rollups.properties_state`). Updates that change no counted column (a user id moved by a
// merge) write nothing.
import type { Knex } from 'knex';

const TABLES_SQL = `
CREATE TABLE property_deltas (
  app_id uuid NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  slot timestamptz NOT NULL,
  event_name text NOT NULL,
  key text NOT NULL,
  strings integer NOT NULL,
  numbers integer NOT NULL,
  booleans integer NOT NULL,
  objects integer NOT NULL,
  arrays integer NOT NULL,
  num_sum numeric NOT NULL,
  num_min numeric,
  num_max numeric,
  recheck boolean NOT NULL DEFAULT false,
  PRIMARY KEY (app_id, id)
);
CREATE INDEX property_deltas_name ON property_deltas (app_id, event_name, slot);

CREATE TABLE property_slots (
  app_id uuid NOT NULL,
  event_name text NOT NULL,
  slot timestamptz NOT NULL,
  key text NOT NULL,
  strings integer NOT NULL,
  numbers integer NOT NULL,
  booleans integer NOT NULL,
  objects integer NOT NULL,
  arrays integer NOT NULL,
  num_sum numeric NOT NULL,
  num_min numeric,
  num_max numeric,
  PRIMARY KEY (app_id, event_name, slot, key)
);

ALTER TABLE app_rollups
  ADD COLUMN properties_state text NOT NULL DEFAULT 'ready' CHECK (properties_state IN ('building', 'ready')),
  ADD COLUMN properties_cursor timestamptz,
  ADD COLUMN properties_done bigint NOT NULL DEFAULT 0;

INSERT INTO app_rollups (app_id, time_zone, state)
SELECT a.id, coalesce(nullif(o.timezone, ''), 'UTC'), 'ready'
FROM apps a JOIN organizations o ON o.id = a.organization_id
ON CONFLICT (app_id) DO NOTHING;
UPDATE app_rollups r SET properties_state = 'building'
WHERE EXISTS (SELECT 1 FROM events e WHERE e.app_id = r.app_id);
`;

const SLOT = (column: string) => `date_bin('15 minutes', ${column}, timestamptz '2000-01-01 00:00:00+00')`;

/** Each non-null property of the events `x` as (key, JSON type, numeric value or null). */
const KEY_VALUES = `CROSS JOIN LATERAL (
    SELECT p.key, jsonb_typeof(p.value) AS t,
           CASE WHEN jsonb_typeof(p.value) = 'number' THEN (p.value #>> '{}')::numeric END AS v
    FROM jsonb_each(CASE WHEN jsonb_typeof(x.properties) = 'object' THEN x.properties END) p
    WHERE jsonb_typeof(p.value) <> 'null') kv`;

/** The figures of a group of key-value rows, each counted `sign` times (a column or a constant). */
const FIGURES = (sign: string) => `
    coalesce(sum(${sign}) FILTER (WHERE kv.t = 'string'), 0)::integer AS strings,
    coalesce(sum(${sign}) FILTER (WHERE kv.t = 'number'), 0)::integer AS numbers,
    coalesce(sum(${sign}) FILTER (WHERE kv.t = 'boolean'), 0)::integer AS booleans,
    coalesce(sum(${sign}) FILTER (WHERE kv.t = 'object'), 0)::integer AS objects,
    coalesce(sum(${sign}) FILTER (WHERE kv.t = 'array'), 0)::integer AS arrays,
    coalesce(sum(${sign} * kv.v), 0) AS num_sum`;

const COLUMNS = 'strings, numbers, booleans, objects, arrays, num_sum, num_min, num_max';
/** The rows of `fresh` as property_slots takes them. */
const FRESH = `SELECT p_app, f.event_name, f.slot, f.key, ${COLUMNS.replace(/(\w+)/g, 'f.$1')} FROM fresh f
    ORDER BY f.event_name, f.slot, f.key`;

const FUNCTIONS_SQL = `
CREATE FUNCTION tally_property_slots_lock(p_app uuid) RETURNS boolean LANGUAGE sql AS $$
  SELECT pg_try_advisory_xact_lock(hashtextextended('tally_property_slots:' || p_app::text, 0))
$$;

-- Recounts from events the slots and names that up to p_limit rechecked deltas of the app name
-- (all their deltas go), in one statement: one snapshot decides what is counted, so a delta
-- committed after it began is kept and its event is not in the recount. Returns the deltas that went.
CREATE FUNCTION tally_property_slots_recheck(p_app uuid, p_limit integer) RETURNS integer LANGUAGE sql AS $$
  WITH pairs AS (
    SELECT DISTINCT d.slot, d.event_name FROM property_deltas d WHERE d.app_id = p_app AND d.recheck
    ORDER BY d.slot, d.event_name LIMIT p_limit
  ), dropped AS (
    DELETE FROM property_deltas d USING pairs p
    WHERE d.app_id = p_app AND d.slot = p.slot AND d.event_name = p.event_name RETURNING 1
  ), fresh AS (
    SELECT p.slot, p.event_name, kv.key, ${FIGURES('1')}, min(kv.v) AS num_min, max(kv.v) AS num_max
    FROM pairs p JOIN events x ON x.app_id = p_app AND x.event_name = p.event_name
      AND x.created_at >= p.slot AND x.created_at < p.slot + interval '15 minutes' AND NOT x.is_bot
    ${KEY_VALUES}
    GROUP BY 1, 2, 3
  ), stale AS (
    DELETE FROM property_slots s USING pairs p
    WHERE s.app_id = p_app AND s.event_name = p.event_name AND s.slot = p.slot
      AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.slot = s.slot AND f.event_name = s.event_name AND f.key = s.key)
  ), written AS (
    INSERT INTO property_slots (app_id, event_name, slot, key, ${COLUMNS})
    ${FRESH}
    ON CONFLICT (app_id, event_name, slot, key) DO UPDATE SET strings = excluded.strings,
      numbers = excluded.numbers, booleans = excluded.booleans, objects = excluded.objects, arrays = excluded.arrays,
      num_sum = excluded.num_sum, num_min = excluded.num_min, num_max = excluded.num_max
  )
  SELECT count(*)::integer FROM dropped
$$;

-- Folds the app's rechecked slots, then up to p_limit of its oldest other deltas, into
-- property_slots, unless another session holds the app (then -1). Returns how many deltas went.
CREATE FUNCTION tally_property_slots_fold(p_app uuid, p_limit integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE v_rechecked integer; v_n integer;
BEGIN
  IF NOT tally_property_slots_lock(p_app) THEN RETURN -1; END IF;
  v_rechecked := tally_property_slots_recheck(p_app, greatest(p_limit / 40, 1));
  WITH moved AS (
    DELETE FROM property_deltas d
    WHERE d.app_id = p_app
      AND d.id IN (SELECT id FROM property_deltas WHERE app_id = p_app AND NOT recheck ORDER BY id LIMIT p_limit)
    RETURNING d.*
  ), sums AS (
    SELECT m.event_name, m.slot, m.key, sum(m.strings)::integer AS strings, sum(m.numbers)::integer AS numbers,
           sum(m.booleans)::integer AS booleans, sum(m.objects)::integer AS objects, sum(m.arrays)::integer AS arrays,
           sum(m.num_sum) AS num_sum, min(m.num_min) AS num_min, max(m.num_max) AS num_max, count(*) AS n
    FROM moved m GROUP BY 1, 2, 3
  ), folded AS (
    INSERT INTO property_slots (app_id, event_name, slot, key, ${COLUMNS})
    SELECT p_app, s.event_name, s.slot, s.key, s.strings, s.numbers, s.booleans, s.objects, s.arrays,
           s.num_sum, s.num_min, s.num_max
    FROM sums s ORDER BY s.event_name, s.slot, s.key
    ON CONFLICT (app_id, event_name, slot, key) DO UPDATE SET
      strings = property_slots.strings + excluded.strings, numbers = property_slots.numbers + excluded.numbers,
      booleans = property_slots.booleans + excluded.booleans, objects = property_slots.objects + excluded.objects,
      arrays = property_slots.arrays + excluded.arrays, num_sum = property_slots.num_sum + excluded.num_sum,
      num_min = least(property_slots.num_min, excluded.num_min), num_max = greatest(property_slots.num_max, excluded.num_max)
  )
  SELECT coalesce(sum(n), 0)::integer INTO v_n FROM sums;
  RETURN v_n + v_rechecked;
END $$;

-- One step of an app's backfill: the events of whole slots from the cursor to the slot after the
-- p_batch-th event (or to the end), counted from events, their deltas dropped in the same
-- statement; at the end the app's property rollup is ready. Returns the events counted (at least
-- 1 while there is more to do; 0 when it became or was ready), or -1 when another session holds the app.
CREATE FUNCTION tally_property_slots_backfill_step(p_app uuid, p_batch integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_state text; v_from timestamptz; v_to timestamptz; v_n bigint;
BEGIN
  IF NOT tally_property_slots_lock(p_app) THEN RETURN -1; END IF;
  SELECT properties_state, properties_cursor INTO v_state, v_from FROM app_rollups WHERE app_id = p_app;
  IF v_state IS DISTINCT FROM 'building' THEN RETURN 0; END IF;
  SELECT ${SLOT('e.created_at')} + interval '15 minutes' INTO v_to FROM events e
  WHERE e.app_id = p_app AND NOT e.is_bot AND (v_from IS NULL OR e.created_at >= v_from)
  ORDER BY e.created_at OFFSET p_batch LIMIT 1;
  WITH counted AS (
    SELECT count(*) AS n FROM events e WHERE e.app_id = p_app AND NOT e.is_bot
      AND (v_from IS NULL OR e.created_at >= v_from) AND (v_to IS NULL OR e.created_at < v_to)
  ), fresh AS (
    SELECT x.event_name, ${SLOT('x.created_at')} AS slot, kv.key, ${FIGURES('1')}, min(kv.v) AS num_min, max(kv.v) AS num_max
    FROM events x ${KEY_VALUES}
    WHERE x.app_id = p_app AND NOT x.is_bot
      AND (v_from IS NULL OR x.created_at >= v_from) AND (v_to IS NULL OR x.created_at < v_to)
    GROUP BY 1, 2, 3
  ), dropped AS (
    DELETE FROM property_deltas d WHERE d.app_id = p_app
      AND (v_from IS NULL OR d.slot >= v_from) AND (v_to IS NULL OR d.slot < v_to)
  ), stale AS (
    DELETE FROM property_slots s WHERE s.app_id = p_app
      AND (v_from IS NULL OR s.slot >= v_from) AND (v_to IS NULL OR s.slot < v_to)
      AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.slot = s.slot AND f.event_name = s.event_name AND f.key = s.key)
  ), written AS (
    INSERT INTO property_slots (app_id, event_name, slot, key, ${COLUMNS})
    ${FRESH}
    ON CONFLICT (app_id, event_name, slot, key) DO UPDATE SET strings = excluded.strings,
      numbers = excluded.numbers, booleans = excluded.booleans, objects = excluded.objects, arrays = excluded.arrays,
      num_sum = excluded.num_sum, num_min = excluded.num_min, num_max = excluded.num_max
  )
  SELECT n INTO v_n FROM counted;
  IF v_to IS NULL THEN
    UPDATE app_rollups SET properties_state = 'ready', properties_cursor = NULL,
      properties_done = properties_done + v_n, updated_at = now() WHERE app_id = p_app;
  ELSE
    UPDATE app_rollups SET properties_cursor = v_to, properties_done = properties_done + v_n, updated_at = now()
    WHERE app_id = p_app;
  END IF;
  RETURN greatest(v_n, CASE WHEN v_to IS NULL THEN 0 ELSE 1 END);
END $$;

CREATE FUNCTION tally_property_slots_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO property_deltas (app_id, slot, event_name, key, ${COLUMNS})
  SELECT x.app_id, ${SLOT('x.created_at')}, x.event_name, kv.key, ${FIGURES('1')}, min(kv.v), max(kv.v)
  FROM new_rows x ${KEY_VALUES}
  WHERE NOT x.is_bot
  GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END $$;

CREATE FUNCTION tally_property_slots_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO property_deltas (app_id, slot, event_name, key, ${COLUMNS}, recheck)
  SELECT x.app_id, ${SLOT('x.created_at')}, x.event_name, kv.key, ${FIGURES('-1')}, NULL::numeric, NULL::numeric, true
  FROM old_rows x ${KEY_VALUES}
  WHERE NOT x.is_bot
  GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END $$;

-- Only events whose counted columns changed: each old version taken back, each new one counted.
CREATE FUNCTION tally_property_slots_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO property_deltas (app_id, slot, event_name, key, ${COLUMNS}, recheck)
  SELECT x.app_id, ${SLOT('x.created_at')}, x.event_name, kv.key, ${FIGURES('x.sign')},
         min(kv.v) FILTER (WHERE x.sign > 0), max(kv.v) FILTER (WHERE x.sign > 0), true
  FROM (
    SELECT c.* FROM old_rows o FULL JOIN new_rows n ON n.app_id = o.app_id AND n.id = o.id
    CROSS JOIN LATERAL (VALUES (o.app_id, o.created_at, o.event_name, o.properties, o.is_bot, -1),
                               (n.app_id, n.created_at, n.event_name, n.properties, n.is_bot, 1))
      c(app_id, created_at, event_name, properties, is_bot, sign)
    WHERE c.app_id IS NOT NULL
      AND (o.created_at, o.event_name, o.properties, o.is_bot) IS DISTINCT FROM
          (n.created_at, n.event_name, n.properties, n.is_bot)
  ) x ${KEY_VALUES}
  WHERE NOT x.is_bot
  GROUP BY 1, 2, 3, 4;
  RETURN NULL;
END $$;

CREATE TRIGGER events_properties_inserted AFTER INSERT ON events
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_property_slots_inserted();
CREATE TRIGGER events_properties_updated AFTER UPDATE ON events
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_property_slots_updated();
CREATE TRIGGER events_properties_deleted AFTER DELETE ON events
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tally_property_slots_deleted();
`;

const FUNCTIONS = [
  'tally_property_slots_lock(uuid)',
  'tally_property_slots_recheck(uuid, integer)',
  'tally_property_slots_fold(uuid, integer)',
  'tally_property_slots_backfill_step(uuid, integer)',
  'tally_property_slots_inserted()',
  'tally_property_slots_deleted()',
  'tally_property_slots_updated()',
];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(TABLES_SQL);
  await knex.raw(FUNCTIONS_SQL);
  for (const fn of FUNCTIONS) await knex.raw(`REVOKE ALL ON FUNCTION ${fn} FROM PUBLIC`);
}

export async function down(knex: Knex): Promise<void> {
  for (const t of ['inserted', 'updated', 'deleted'])
    await knex.raw(`DROP TRIGGER IF EXISTS events_properties_${t} ON events`);
  for (const fn of [...FUNCTIONS].reverse()) await knex.raw(`DROP FUNCTION IF EXISTS ${fn}`);
  await knex.raw(
    'ALTER TABLE app_rollups DROP COLUMN IF EXISTS properties_state, DROP COLUMN IF EXISTS properties_cursor, DROP COLUMN IF EXISTS properties_done',
  );
  await knex.raw('DROP TABLE IF EXISTS property_slots, property_deltas');
}
