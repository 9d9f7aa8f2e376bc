// The activity rollup's upkeep, run by the job runner (jobs/index.ts): deltas folded within
// seconds of their events; an app's rollup rebuilt in the background after the upgrade that
// created it and after its organization's time zone changed (metrics read raw events meanwhile),
// in bounded batches paced like retention so that ingestion keeps most of the database.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../storage/handle.js';
import {
  appsBuilding,
  appsWithDeltas,
  appsWithMovedZone,
  foldDeltas,
  rebuildStep,
  restartRollup,
  vacuumChurningTables,
} from './queries/rollups.js';

/** Deltas folded per statement. */
export const FOLD_BATCH = 20_000;
/** Users recounted per rebuild statement. */
export const REBUILD_BATCH = 200;

export interface RollupPace {
  /** Rest this many times as long as a batch took. */
  pauseFactor: number;
  /** Stop after this long (the next run goes on). */
  budgetMs: number;
}

/**
 * Folds every app's waiting deltas, then clears the dead rows folding left when they outnumber the
 * live ones (vacuumChurningTables); returns how many deltas were folded.
 */
export async function foldRollups(db: Db, options: { vacuumMinDead?: number } = {}): Promise<number> {
  let total = 0;
  for (const appId of await appsWithDeltas(db)) {
    for (;;) {
      const n = await foldDeltas(db, appId, FOLD_BATCH);
      if (n > 0) total += n;
      if (n < FOLD_BATCH) break;
    }
  }
  if (total > 0) await vacuumChurningTables(db, options.vacuumMinDead);
  return total;
}

/**
 * Restarts the rollups of apps whose organization moved to another time zone, then goes on with
 * every rollup being built, a batch of users at a time, until done or out of budget.
 */
export async function rebuildRollups(
  db: Db,
  pace: RollupPace = { pauseFactor: 3, budgetMs: 50_000 },
): Promise<{ apps: number; users: number }> {
  const started = performance.now();
  for (const moved of await appsWithMovedZone(db)) await restartRollup(db, moved.app_id, moved.time_zone);
  let users = 0;
  const apps = await appsBuilding(db);
  for (const appId of apps) {
    for (;;) {
      const t = performance.now();
      const n = await rebuildStep(db, appId, REBUILD_BATCH);
      if (n <= 0) break;
      users += n;
      if (performance.now() - started > pace.budgetMs) return { apps: apps.length, users };
      await sleep((performance.now() - t) * pace.pauseFactor);
    }
  }
  return { apps: apps.length, users };
}
