// The activity rollup's upkeep, run by the job runner (jobs/index.ts): deltas folded within
// seconds of their events; an app's rollup rebuilt in the background after the upgrade that
// created it and after its organization's time zone changed (metrics read raw events meanwhile),
// in bounded batches paced like retention so that ingestion keeps most of the database.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../storage/handle.js';
import {
  appsBackfillingEvents,
  appsBackfillingProperties,
  appsBuilding,
  appsWithDeltas,
  appsWithEventDeltas,
  appsWithMovedZone,
  appsWithPropertyDeltas,
  eventBackfillStep,
  foldDeltas,
  foldEventDeltas,
  foldPropertyDeltas,
  propertyBackfillStep,
  rebuildStep,
  restartRollup,
  vacuumChurningTables,
} from './queries/rollups.js';

/** Deltas folded per statement. */
export const FOLD_BATCH = 20_000;
/** Users recounted per rebuild statement. */
export const REBUILD_BATCH = 200;
/** Existing events counted into the per-event rollup per backfill statement. */
export const EVENT_BACKFILL_BATCH = 50_000;

export interface RollupPace {
  /** Rest this many times as long as a batch took. */
  pauseFactor: number;
  /** Stop after this long (the next run goes on). */
  budgetMs: number;
}

/**
 * Folds every app's waiting deltas (the activity rollup's, the per-event and the per-property
 * rollups'), then clears
 * the dead rows folding left when they outnumber the live ones (vacuumChurningTables); returns how
 * many deltas were folded.
 */
export async function foldRollups(db: Db, options: { vacuumMinDead?: number } = {}): Promise<number> {
  let total = 0;
  const drain = async (apps: string[], fold: (db: Db, appId: string, limit: number) => Promise<number>) => {
    for (const appId of apps) {
      for (;;) {
        const n = await fold(db, appId, FOLD_BATCH);
        if (n > 0) total += n;
        if (n < FOLD_BATCH) break;
      }
    }
  };
  await drain(await appsWithDeltas(db), foldDeltas);
  await drain(await appsWithEventDeltas(db), foldEventDeltas);
  await drain(await appsWithPropertyDeltas(db), foldPropertyDeltas);
  if (total > 0) await vacuumChurningTables(db, options.vacuumMinDead);
  return total;
}

/**
 * Restarts the rollups of apps whose organization moved to another time zone, then goes on with
 * every rollup being built, a batch of users at a time, and with every per-event rollup being
 * counted from existing events (then every per-property rollup), a batch of events at a time, until
 * done or out of budget.
 */
export async function rebuildRollups(
  db: Db,
  pace: RollupPace = { pauseFactor: 3, budgetMs: 50_000 },
): Promise<{ apps: number; users: number; events: number; properties: number }> {
  const started = performance.now();
  for (const moved of await appsWithMovedZone(db)) await restartRollup(db, moved.app_id, moved.time_zone);
  const done = { apps: 0, users: 0, events: 0, properties: 0 };
  /** Runs `step` for each app until it has nothing left; false when out of budget. */
  const paced = async (
    apps: string[],
    step: (appId: string) => Promise<number>,
    into: 'users' | 'events' | 'properties',
  ) => {
    done.apps += apps.length;
    for (const appId of apps) {
      for (;;) {
        const t = performance.now();
        const n = await step(appId);
        if (n <= 0) break;
        done[into] += n;
        if (performance.now() - started > pace.budgetMs) return false;
        await sleep((performance.now() - t) * pace.pauseFactor);
      }
    }
    return true;
  };
  if (!(await paced(await appsBuilding(db), (a) => rebuildStep(db, a, REBUILD_BATCH), 'users'))) return done;
  const events = (a: string) => eventBackfillStep(db, a, EVENT_BACKFILL_BATCH);
  if (!(await paced(await appsBackfillingEvents(db), events, 'events'))) return done;
  const properties = (a: string) => propertyBackfillStep(db, a, EVENT_BACKFILL_BATCH);
  await paced(await appsBackfillingProperties(db), properties, 'properties');
  return done;
}
