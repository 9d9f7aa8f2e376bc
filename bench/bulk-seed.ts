// The benchmarks' bulk path for demo data: the same users and events as `seed-demo` (the demo
// generator of tracking/demo.ts, same seed), written straight into the tables with multi-row
// INSERTs of 10,000 rows from arrays (one statement each) instead of through the ingestion
// service, so ten million events seed in minutes. The rollups are then built as an upgrade builds
// them for events written before them: the app's rollups are marked `building` first, the events go
// in with the triggers (and foreign-key checks) of the session off (`session_replication_role =
// replica`, in each insert's own transaction), and the `rebuild-rollups` backfill counts them
// (timed apart: `rollup_seconds`); the counters ingestion keeps (users' event counts and last
// activity, the event dictionary, daily counts) are recounted at the end. Folding deltas written
// by the triggers came to the same rows more slowly (at ten million events, 643 to 930 s of fold on
// top of the inserts). test/e2e/bulk-seed.test.ts shows both ways give the same rollups.
import { rebuildRollups } from '../server/src/analytics/rollups.js';
import { uuidv7 } from '../server/src/ids.js';
import type { Database } from '../server/src/storage/db.js';
import { demoDays } from '../server/src/tracking/demo.js';

const ROWS = 10_000;

export interface BulkSeedOptions {
  users: number;
  days: number;
  seed: number;
  end_date: string;
}

async function insertUsers(knex: Database['knex'], appId: string, refs: string[]): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (let i = 0; i < refs.length; i += ROWS) {
    const chunk = refs.slice(i, i + ROWS);
    const rows = chunk.map((ref) => {
      const id = uuidv7();
      ids.set(ref, id);
      return id;
    });
    await knex.raw(
      `insert into users (id, app_id, external_id, created_via)
       select id, ?::uuid, ref, 'api' from unnest(?::uuid[], ?::text[]) x(id, ref)`,
      [appId, rows, chunk],
    );
  }
  return ids;
}

async function insertEvents(
  knex: Database['knex'],
  appId: string,
  rows: { id: string; user: string; name: string; props: string; at: string }[],
): Promise<void> {
  await knex.transaction(async (trx) => {
    // No rollup triggers: the backfill counts these events (bulkSeedDemo).
    await trx.raw('set local session_replication_role = replica');
    await trx.raw(
      `insert into events (id, app_id, user_id, event_name, properties, source, is_bot, created_at, received_at)
       select id, ?::uuid, u, n, p::jsonb, 'demo', false, t, t
       from unnest(?::uuid[], ?::uuid[], ?::text[], ?::text[], ?::timestamptz[]) x(id, u, n, p, t)`,
      [
        appId,
        rows.map((r) => r.id),
        rows.map((r) => r.user),
        rows.map((r) => r.name),
        rows.map((r) => r.props),
        rows.map((r) => r.at),
      ],
    );
  });
}

/** What ingestion counts as it goes, counted once for the whole app. */
async function recountCounters(knex: Database['knex'], appId: string): Promise<void> {
  await knex.raw(
    `update users u set event_count = s.n, last_active = s.last
     from (select user_id, count(*) as n, max(created_at) as last from events where app_id = ?::uuid group by 1) s
     where u.app_id = ?::uuid and u.id = s.user_id`,
    [appId, appId],
  );
  await knex.raw(
    `insert into event_definitions (id, app_id, event_name, first_seen, last_seen, volume)
     select gen_random_uuid(), ?::uuid, event_name, min(created_at), max(created_at), count(*)
     from events where app_id = ?::uuid group by event_name
     on conflict (app_id, event_name) do update set first_seen = excluded.first_seen,
       last_seen = excluded.last_seen, volume = excluded.volume`,
    [appId, appId],
  );
  await knex.raw(
    `insert into event_daily_counts (app_id, event_name, day, count)
     select ?::uuid, event_name, (created_at at time zone 'UTC')::date, count(*)
     from events where app_id = ?::uuid group by 2, 3
     on conflict (app_id, event_name, day) do update set count = excluded.count`,
    [appId, appId],
  );
}

/** Seeds the demo data in bulk; returns what it wrote and how long each part took. */
export async function bulkSeedDemo(database: Database, appId: string, options: BulkSeedOptions, timeZone = 'UTC') {
  const knex = database.knex;
  // Every rollup of the app to be built from its events, as after an upgrade.
  await knex.raw('select tally_rollup_zone(?::uuid)', [appId]);
  await knex('app_rollups').where({ app_id: appId }).update({
    state: 'building',
    cursor: null,
    users_done: 0,
    events_state: 'building',
    events_cursor: null,
    events_done: 0,
    properties_state: 'building',
    properties_cursor: null,
    properties_done: 0,
  });
  let started = performance.now();
  let ids: Map<string, string> | undefined;
  let events = 0;
  let pending: { id: string; user: string; name: string; props: string; at: string }[] = [];
  for (const day of demoDays(options, timeZone)) {
    ids ??= await insertUsers(
      knex,
      appId,
      day.users.map((u) => u.id),
    );
    for (const e of day.events) {
      pending.push({
        id: uuidv7(e.createdAt.getTime()),
        user: ids.get(e.userRef)!,
        name: e.eventName,
        props: JSON.stringify(e.properties),
        at: e.createdAt.toISOString(),
      });
      if (pending.length === ROWS) {
        await insertEvents(knex, appId, pending);
        events += pending.length;
        pending = [];
      }
    }
  }
  if (pending.length > 0) {
    await insertEvents(knex, appId, pending);
    events += pending.length;
  }
  await recountCounters(knex, appId);
  const seedSeconds = (performance.now() - started) / 1000;
  started = performance.now();
  await rebuildRollups(knex, { pauseFactor: 0, budgetMs: 24 * 3_600_000 });
  const rollupSeconds = (performance.now() - started) / 1000;
  return { users: ids?.size ?? 0, events, seed_seconds: round1(seedSeconds), rollup_seconds: round1(rollupSeconds) };
}

const round1 = (n: number) => Math.round(n * 10) / 10;
