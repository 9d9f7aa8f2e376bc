// One round trip per group of events: the event writer (storage/event-writer.ts) stores one app's
// part of a group with a single call of `tally_ingest(...)`, a PL/pgSQL function that runs the
// statements the writer used to send one by one (users resolved, locked and created;
// the identity rule of website events; insert_id dedup; events; trigger outbox; per-user counters;
// the event dictionary and daily volumes; website visits). A single statement is its own
// transaction: it commits or rolls back whole, so a group is all-or-nothing as before.
//
// Why: under load the writer's ~9 round trips a group each waited behind HTTP work on the one
// event-loop thread, so a group of about 16 events took about 10 ms, and requests waited for it;
// one call takes one turn of the loop (bench/README.md, issue 32).
//
// Concurrent groups on several connections: the rows several groups update (users' event_count and
// last_active, event_definitions, event_daily_counts) are locked last, each table in key order, so
// groups never deadlock and wait on a hot user or event name only for those last statements. Users
// are resolved without a lock; the lock for their counters finds one erased since (the erasure
// locks the user first) or closed to browsers since (a REST write), and the call then fails with
// serialization_failure and is retried, and sees it.
// (A key-share lock at resolution, as the writer took before, left a multixact on every row that
// concurrent groups shared, and PostgreSQL's multixact lookups made each call ten times slower.)
//
// The function runs with its caller's rights (SECURITY INVOKER) and EXECUTE is revoked from PUBLIC:
// only the role that owns it (Tally's own) may call it, never the SQL sandbox's role.
import type { Knex } from 'knex';

export const INGEST_FUNCTION = 'tally_ingest(uuid, jsonb, jsonb, boolean, interval)';

const FUNCTION_SQL = `
CREATE TYPE tally_ingest_event AS (
  i integer,            -- position in the call's events
  req integer,          -- the request it belongs to (all or nothing)
  ref text,             -- external id or alias
  name text,
  props jsonb,
  ip text,
  ua text,
  insert_id text,
  created_at timestamptz,
  received_at timestamptz,
  id uuid,              -- the id it gets if stored
  source text,          -- api | website | demo
  is_bot boolean,
  verified boolean,     -- a website event with a valid user_hash
  fires boolean,        -- may fire a trigger campaign
  new_user uuid,        -- the id its user gets if created here (one per ref)
  new_def uuid          -- the id its dictionary entry gets if created here (one per name)
);

CREATE FUNCTION tally_ingest(p_app uuid, p_events jsonb, p_visits jsonb, p_outbox boolean, p_dedup_window interval)
RETURNS jsonb LANGUAGE plpgsql SECURITY INVOKER AS $fn$
DECLARE
  v_events tally_ingest_event[];
  v_refs text[];
  v_ids uuid[];
  v_closed boolean[];
  v_refused integer[] := '{}';
  v_now_refused integer[];
  v_bad integer[] := '{}';
  v_now_bad integer[];
  v_missing integer;
  v_first_ins text[];
  v_first_i integer[];
  v_first_id uuid[];
  v_claimed text[];
  v_orig_ins text[];
  v_orig_ids uuid[];
  v_ri integer[];
  v_rid uuid[];
  v_rdup boolean[];
  v_outbox integer := 0;
  v_locked integer;
  v_closed_now integer;
  v_browser uuid[] := '{}';
  v_has_browser boolean;
BEGIN
  v_events := ARRAY(
    SELECT ROW(x.i, x.req, x.ref, x.name, coalesce(x.props, '{}'::jsonb), x.ip, x.ua, x.insert_id, x.created_at,
               x.received_at, x.id, x.source, x.is_bot, coalesce(x.verified, false), coalesce(x.fires, false),
               x.new_user, x.new_def)::tally_ingest_event
    FROM jsonb_to_recordset(p_events) AS x(i integer, req integer, ref text, name text, props jsonb, ip text, ua text,
      insert_id text, created_at timestamptz, received_at timestamptz, id uuid, source text, is_bot boolean,
      verified boolean, fires boolean, new_user uuid, new_def uuid));

  v_has_browser := EXISTS (SELECT 1 FROM unnest(v_events) e WHERE e.source = 'website' AND NOT e.verified);

  -- Users: resolve every identifier (an external id wins over an alias) with what the identity
  -- rule reads. Website events without a valid user_hash may only reach users open to browsers: a
  -- request naming another user is refused alone, before anything of it is created. Unknown
  -- identifiers are created, and the loop resolves again until every one is found. The rows are
  -- locked later, for the counters; a user erased in between is caught there.
  FOR attempt IN 1..8 LOOP
    SELECT coalesce(array_agg(n.ref), '{}'), coalesce(array_agg(u.id), '{}'),
           coalesce(array_agg(NOT (u.created_via = 'website' AND u.api_written_at IS NULL)), '{}')
      INTO v_refs, v_ids, v_closed
    FROM (SELECT DISTINCT e.ref FROM unnest(v_events) e) n
    CROSS JOIN LATERAL (
      SELECT d.id, d.created_via, d.api_written_at FROM users d WHERE d.app_id = p_app AND d.external_id = n.ref
      UNION ALL
      SELECT d.id, d.created_via, d.api_written_at
      FROM user_aliases a JOIN users d ON d.app_id = a.app_id AND d.id = a.user_id
      WHERE a.app_id = p_app AND a.alias_id = n.ref
      LIMIT 1
    ) u;

    IF v_has_browser THEN
      -- A new identifier is closed to browsers unless only unverified website events name it.
      v_now_bad := ARRAY(
        SELECT e.i FROM unnest(v_events) e
        LEFT JOIN unnest(v_refs, v_closed) k(ref, closed) ON k.ref = e.ref
        LEFT JOIN (
          SELECT n.ref, max(CASE WHEN n.source <> 'website' THEN 2 WHEN n.verified THEN 1 ELSE 0 END) AS rank
          FROM unnest(v_events) n GROUP BY n.ref
        ) w ON w.ref = e.ref
        WHERE e.source = 'website' AND NOT e.verified AND coalesce(k.closed, w.rank > 0));
      v_now_refused := ARRAY(SELECT DISTINCT e.req FROM unnest(v_events) e WHERE e.i = ANY (v_now_bad));
      IF cardinality(v_now_refused) > 0 THEN
        v_refused := v_refused || v_now_refused;
        v_bad := v_bad || v_now_bad;
        v_events := ARRAY(SELECT e FROM unnest(v_events) e WHERE NOT (e.req = ANY (v_now_refused)));
      END IF;
    END IF;

    SELECT count(*) INTO v_missing FROM (SELECT DISTINCT e.ref FROM unnest(v_events) e) n
    WHERE NOT EXISTS (SELECT 1 FROM unnest(v_refs) k(ref) WHERE k.ref = n.ref);
    EXIT WHEN v_missing = 0;
    IF attempt = 8 THEN
      RAISE EXCEPTION 'tally_ingest: users could not be resolved';
    END IF;

    INSERT INTO users (id, app_id, external_id, created_at, created_via)
    SELECT (array_agg(e.new_user))[1], p_app, e.ref, min(e.created_at),
           CASE max(CASE WHEN e.source <> 'website' THEN 2 WHEN e.verified THEN 1 ELSE 0 END)
             WHEN 2 THEN 'api' WHEN 1 THEN 'website_verified' ELSE 'website' END
    FROM unnest(v_events) e
    WHERE NOT EXISTS (SELECT 1 FROM unnest(v_refs) k(ref) WHERE k.ref = e.ref)
    GROUP BY e.ref
    ORDER BY e.ref
    ON CONFLICT (app_id, external_id) DO NOTHING;
  END LOOP;

  -- The users that website events without a valid user_hash name: checked again once locked.
  IF v_has_browser THEN
    v_browser := ARRAY(
      SELECT DISTINCT m.id FROM unnest(v_events) e JOIN unnest(v_refs, v_ids) m(ref, id) ON m.ref = e.ref
      WHERE e.source = 'website' AND NOT e.verified);
  END IF;

  -- insert_id dedup: the first event of each insert_id in this call claims it (or takes over a claim
  -- older than the window); the others, and those already claimed, are duplicates of that event.
  SELECT coalesce(array_agg(f.insert_id), '{}'), coalesce(array_agg(f.i), '{}'), coalesce(array_agg(f.id), '{}')
    INTO v_first_ins, v_first_i, v_first_id
  FROM (SELECT DISTINCT ON (e.insert_id) e.insert_id, e.i, e.id, e.received_at
        FROM unnest(v_events) e WHERE e.insert_id IS NOT NULL ORDER BY e.insert_id, e.i) f;
  IF cardinality(v_first_ins) > 0 THEN
    WITH claimed AS (
      INSERT INTO event_dedup (app_id, insert_id, event_id, received_at)
      SELECT p_app, f.insert_id, f.id, e.received_at
      FROM unnest(v_first_ins, v_first_i, v_first_id) f(insert_id, i, id)
      JOIN unnest(v_events) e ON e.i = f.i
      ORDER BY f.insert_id
      ON CONFLICT (app_id, insert_id) DO UPDATE SET event_id = excluded.event_id, received_at = excluded.received_at
      WHERE event_dedup.received_at < excluded.received_at - p_dedup_window
      RETURNING insert_id)
    SELECT coalesce(array_agg(insert_id), '{}') INTO v_claimed FROM claimed;
    -- A new statement, so it sees claims that concurrent writes committed while this one waited.
    SELECT coalesce(array_agg(d.insert_id), '{}'), coalesce(array_agg(d.event_id), '{}') INTO v_orig_ins, v_orig_ids
    FROM event_dedup d
    WHERE d.app_id = p_app AND d.insert_id = ANY (v_first_ins) AND NOT (d.insert_id = ANY (v_claimed));
  ELSE
    v_orig_ins := '{}';
    v_orig_ids := '{}';
  END IF;

  SELECT coalesce(array_agg(x.i ORDER BY x.i), '{}'), coalesce(array_agg(x.eid ORDER BY x.i), '{}'),
         coalesce(array_agg(x.dup ORDER BY x.i), '{}')
    INTO v_ri, v_rid, v_rdup
  FROM (
    SELECT e.i,
           CASE WHEN e.insert_id IS NULL THEN e.id ELSE coalesce(o.event_id, f.id) END AS eid,
           e.insert_id IS NOT NULL AND (o.event_id IS NOT NULL OR e.i <> f.i) AS dup
    FROM unnest(v_events) e
    LEFT JOIN unnest(v_first_ins, v_first_i, v_first_id) f(insert_id, i, id) ON f.insert_id = e.insert_id
    LEFT JOIN unnest(v_orig_ins, v_orig_ids) o(insert_id, event_id) ON o.insert_id = e.insert_id
  ) x;

  -- What is stored from here on: the events that are not duplicates, with their users.
  IF true = ANY (v_rdup) THEN
    v_events := ARRAY(
      SELECT e FROM unnest(v_events) e JOIN unnest(v_ri, v_rdup) r(i, dup) ON r.i = e.i AND NOT r.dup ORDER BY e.i);
  END IF;

  INSERT INTO events (id, app_id, user_id, event_name, properties, ip, ua, source, is_bot, created_at, received_at)
  SELECT e.id, p_app, m.id, e.name, e.props, e.ip, e.ua, e.source, e.is_bot, e.created_at, e.received_at
  FROM unnest(v_events) e JOIN unnest(v_refs, v_ids) m(ref, id) ON m.ref = e.ref
  ORDER BY e.i;

  IF p_outbox THEN
    INSERT INTO campaign_trigger_outbox (app_id, campaign_id, user_id, event_id, event_at, received_at)
    SELECT c.app_id, c.id, m.id, e.id, e.created_at, e.received_at
    FROM unnest(v_events) e
    JOIN unnest(v_refs, v_ids) m(ref, id) ON m.ref = e.ref
    JOIN campaigns c ON c.app_id = p_app AND c.schedule_type = 'trigger' AND c.status IN ('scheduled', 'live')
      AND c.trigger_event_name = e.name
    WHERE e.fires
    ORDER BY e.i, c.id;
    GET DIAGNOSTICS v_outbox = ROW_COUNT;
  END IF;

  IF jsonb_array_length(p_visits) > 0 THEN
    INSERT INTO visits (id, app_id, user_id, visitor_id, visit_url, path, referrer, page_title, ua, ip, signals,
                        advanced_signals, is_bot, bot_reason, event_id, created_at)
    SELECT v.id, p_app, m.id, v.visitor_id, v.visit_url, v.path, v.referrer, v.page_title, v.ua, v.ip,
           coalesce(v.signals, '{}'::jsonb), v.advanced_signals, v.is_bot, v.bot_reason, v.event_id, v.created_at
    FROM jsonb_to_recordset(p_visits) AS v(req integer, ref text, id uuid, visitor_id text, visit_url text, path text,
      referrer text, page_title text, ua text, ip text, signals jsonb, advanced_signals jsonb, is_bot boolean,
      bot_reason text, event_id uuid, created_at timestamptz)
    JOIN unnest(v_refs, v_ids) m(ref, id) ON m.ref = v.ref
    WHERE NOT (v.req = ANY (v_refused));
  END IF;

  -- Shared rows last, each in key order, so concurrent writes wait on them only for these last
  -- statements and never deadlock. The users first: every one must still be there (else it was
  -- erased after it was resolved), and every user a website event without a valid user_hash names
  -- must still be open to browsers (else the REST API wrote it meanwhile). Either way the call fails
  -- with serialization_failure and the writer runs it again from the start, where the first case
  -- creates a new user and the second refuses the request: a browser's events never commit after
  -- a REST write closed their user.
  SELECT count(*), count(*) FILTER (WHERE l.closed AND l.id = ANY (v_browser))
    INTO v_locked, v_closed_now
  FROM (
    SELECT u.id, NOT (u.created_via = 'website' AND u.api_written_at IS NULL) AS closed
    FROM users u WHERE u.app_id = p_app AND u.id = ANY (v_ids) ORDER BY u.id FOR NO KEY UPDATE
  ) l;
  IF v_locked < (SELECT count(DISTINCT x) FROM unnest(v_ids) x) THEN
    RAISE EXCEPTION 'a user was erased while events were being written for it' USING ERRCODE = 'serialization_failure';
  END IF;
  IF v_closed_now > 0 THEN
    RAISE EXCEPTION 'a user was written through the REST API while website events were being written for it'
      USING ERRCODE = 'serialization_failure';
  END IF;
  UPDATE users u SET event_count = u.event_count + a.n, last_active = greatest(u.last_active, a.last), updated_at = now()
  FROM (SELECT m.id, count(*) AS n, max(e.created_at) AS last
        FROM unnest(v_events) e JOIN unnest(v_refs, v_ids) m(ref, id) ON m.ref = e.ref GROUP BY m.id) a
  WHERE u.app_id = p_app AND u.id = ANY (v_ids) AND u.id = a.id;

  INSERT INTO event_definitions (id, app_id, event_name, first_seen, last_seen, volume)
  SELECT (array_agg(e.new_def))[1], p_app, e.name, min(e.created_at), max(e.created_at), count(*)
  FROM unnest(v_events) e GROUP BY e.name ORDER BY e.name
  ON CONFLICT (app_id, event_name) DO UPDATE SET
    first_seen = least(event_definitions.first_seen, excluded.first_seen),
    last_seen = greatest(event_definitions.last_seen, excluded.last_seen),
    volume = event_definitions.volume + excluded.volume;

  INSERT INTO event_daily_counts (app_id, event_name, day, count)
  SELECT p_app, e.name, (e.created_at AT TIME ZONE 'UTC')::date AS day, count(*)
  FROM unnest(v_events) e GROUP BY e.name, day ORDER BY e.name, day
  ON CONFLICT (app_id, event_name, day) DO UPDATE SET count = event_daily_counts.count + excluded.count;

  RETURN jsonb_build_object('refused', to_jsonb(v_refused), 'bad', to_jsonb(v_bad), 'i', to_jsonb(v_ri), 'ids', to_jsonb(v_rid),
                            'dups', to_jsonb(v_rdup), 'outbox', v_outbox);
END
$fn$;

REVOKE ALL ON FUNCTION ${INGEST_FUNCTION} FROM PUBLIC;
`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(FUNCTION_SQL);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP FUNCTION IF EXISTS ${INGEST_FUNCTION}`);
  await knex.raw('DROP TYPE IF EXISTS tally_ingest_event');
}
