// Upkeep of the activity rollup (migration 024): folding deltas, rebuilding an app user by user,
// and restarting a rebuild when an organization's time zone changed. The work is done by the
// database functions the migration created; these call them, per app.
import type { Db } from '../../storage/handle.js';

/** Apps with deltas waiting to be folded. Not per-app by nature: the job's worklist. */
export async function appsWithDeltas(db: Db): Promise<string[]> {
  const { rows } = await db.raw('select distinct app_id from activity_deltas order by app_id');
  return (rows as { app_id: string }[]).map((r) => r.app_id);
}

/** Folds up to `limit` of the app's oldest deltas; -1 when another session holds the app. */
export async function foldDeltas(db: Db, appId: string, limit: number): Promise<number> {
  const { rows } = await db.raw('select tally_rollup_fold(?::uuid, ?::integer) as n', [appId, limit]);
  return Number((rows as { n: number }[])[0]!.n);
}

/** Apps with event deltas waiting to be folded (migration 028). Not per-app by nature: the job's worklist. */
export async function appsWithEventDeltas(db: Db): Promise<string[]> {
  const { rows } = await db.raw('select distinct app_id from event_deltas order by app_id');
  return (rows as { app_id: string }[]).map((r) => r.app_id);
}

/** Folds up to `limit` of the app's oldest event deltas into event_slots; -1 when another session holds the app. */
export async function foldEventDeltas(db: Db, appId: string, limit: number): Promise<number> {
  const { rows } = await db.raw('select tally_event_slots_fold(?::uuid, ?::integer) as n', [appId, limit]);
  return Number((rows as { n: number }[])[0]!.n);
}

/** Apps whose per-event rollup is still being counted from existing events. Not per-app: the job's worklist. */
export async function appsBackfillingEvents(db: Db): Promise<string[]> {
  const { rows } = await db.raw(`select app_id from app_rollups where events_state = 'building' order by app_id`);
  return (rows as { app_id: string }[]).map((r) => r.app_id);
}

/**
 * Counts the app's next `batch` existing events (whole 15-minute slots, in time order) into
 * event_slots; 0 when its per-event rollup became (or was) ready, -1 when busy elsewhere.
 */
export async function eventBackfillStep(db: Db, appId: string, batch: number): Promise<number> {
  const { rows } = await db.raw('select tally_event_slots_backfill_step(?::uuid, ?::integer) as n', [appId, batch]);
  return Number((rows as { n: string | number }[])[0]!.n);
}

/** Apps with property deltas waiting to be folded (migration 030). Not per-app by nature: the job's worklist. */
export async function appsWithPropertyDeltas(db: Db): Promise<string[]> {
  const { rows } = await db.raw('select distinct app_id from property_deltas order by app_id');
  return (rows as { app_id: string }[]).map((r) => r.app_id);
}

/**
 * Recounts the app's rechecked slots from events, then folds up to `limit` of its other property
 * deltas into property_slots; -1 when another session holds the app.
 */
export async function foldPropertyDeltas(db: Db, appId: string, limit: number): Promise<number> {
  const { rows } = await db.raw('select tally_property_slots_fold(?::uuid, ?::integer) as n', [appId, limit]);
  return Number((rows as { n: number }[])[0]!.n);
}

/** Apps whose property rollup is still being counted from existing events. Not per-app: the job's worklist. */
export async function appsBackfillingProperties(db: Db): Promise<string[]> {
  const { rows } = await db.raw(`select app_id from app_rollups where properties_state = 'building' order by app_id`);
  return (rows as { app_id: string }[]).map((r) => r.app_id);
}

/** Counts the app's next `batch` existing events into property_slots; as eventBackfillStep. */
export async function propertyBackfillStep(db: Db, appId: string, batch: number): Promise<number> {
  const { rows } = await db.raw('select tally_property_slots_backfill_step(?::uuid, ?::integer) as n', [appId, batch]);
  return Number((rows as { n: string | number }[])[0]!.n);
}

/** Apps whose rollup is kept in another zone than their organization's now. Not per-app: the job's worklist. */
export async function appsWithMovedZone(db: Db): Promise<{ app_id: string; time_zone: string }[]> {
  const { rows } = await db.raw(
    `select r.app_id, coalesce(nullif(o.timezone, ''), 'UTC') as time_zone
     from app_rollups r join apps a on a.id = r.app_id join organizations o on o.id = a.organization_id
     where r.time_zone <> coalesce(nullif(o.timezone, ''), 'UTC') order by r.app_id`,
  );
  return rows as { app_id: string; time_zone: string }[];
}

/** Starts the app's rebuild in `timeZone`. */
export async function restartRollup(db: Db, appId: string, timeZone: string): Promise<void> {
  await db.raw('select tally_rollup_restart(?::uuid, ?::text)', [appId, timeZone]);
}

/** Apps whose rollup is being built. Not per-app: the job's worklist. */
export async function appsBuilding(db: Db): Promise<string[]> {
  const { rows } = await db.raw(`select app_id from app_rollups where state = 'building' order by app_id`);
  return (rows as { app_id: string }[]).map((r) => r.app_id);
}

/** Rebuilds the app's next `batch` users; 0 when the rollup became (or was) ready, -1 when busy elsewhere. */
export async function rebuildStep(db: Db, appId: string, batch: number): Promise<number> {
  const { rows } = await db.raw('select tally_rollup_rebuild_step(?::uuid, ?::integer) as n', [appId, batch]);
  return Number((rows as { n: number }[])[0]!.n);
}

/** The app's rollup progress, for operators. */
export async function rollupProgress(
  db: Db,
  appId: string,
): Promise<{ state: string; time_zone: string; users_done: number } | undefined> {
  return db('app_rollups').where({ app_id: appId }).first('state', 'time_zone', 'users_done');
}

/** The app's per-event rollup progress, for operators: ready or building, and the events counted so far. */
export async function eventRollupProgress(
  db: Db,
  appId: string,
): Promise<{ state: string; events_done: number } | undefined> {
  const row = await db('app_rollups').where({ app_id: appId }).first('events_state', 'events_done');
  return row ? { state: row.events_state as string, events_done: Number(row.events_done) } : undefined;
}

/** Tables whose rows the fold deletes or rewrites all the time: their dead rows are cleared by the fold job. */
const CHURNING = [
  'activity_deltas',
  'app_days',
  'app_day_gaps',
  'app_periods',
  'user_active_days',
  'user_totals',
  'event_deltas',
  'property_deltas',
] as const;

/**
 * Vacuums those of the rollup's tables that hold more dead rows than live ones (at least
 * `minDead`): on a server with autovacuum off, folded deltas would otherwise stay in the table and
 * its index, and every read of the deltas would step over them (at a million events, 400,000 dead
 * deltas made each metric 140 ms slower). Not per-app: table upkeep. Returns the tables vacuumed.
 */
export async function vacuumChurningTables(db: Db, minDead = 10_000): Promise<string[]> {
  const { rows } = await db.raw(
    `select relname from pg_stat_user_tables
     where schemaname = current_schema() and relname = any(?::text[]) and n_dead_tup >= ? and n_dead_tup > n_live_tup
     order by relname`,
    [[...CHURNING], minDead],
  );
  const names = (rows as { relname: (typeof CHURNING)[number] }[])
    .map((r) => r.relname)
    .filter((n) => CHURNING.includes(n));
  for (const name of names) await db.raw(`vacuum (analyze) ${name}`);
  return names;
}
