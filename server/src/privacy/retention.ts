// Retention: each app with a `retention_days` period loses its events, website visits and push
// deliveries older than that period. Run daily by the job runner (jobs/index.ts). Rows go in
// bounded batches, each its own short statement, so ingestion carries on between them; what was
// counted from the events (users' event counts, the event dictionary's volumes, daily counts)
// loses the deleted events too. Users, aliases, subscriptions and the audit trail stay.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../context.js';
import { type Db, retryOnConflict } from '../storage/handle.js';
import {
  appsWithRetention,
  deleteEmptyDailyCounts,
  deleteExpiredEvents,
  deleteExpiredRows,
} from './queries/retention.js';

const DAY_MS = 86_400_000;

/** Rows deleted per statement. */
export const RETENTION_BATCH = 2_000;

/**
 * After each batch the job rests this many times as long as the batch took, so that it takes at
 * most a quarter of the database's time and ingestion keeps most of it (bench/README.md).
 */
export const RETENTION_PAUSE_FACTOR = 3;

export interface RetentionPace {
  batch: number;
  pauseFactor: number;
}

export interface RetentionOutcome {
  app_id: string;
  before: string;
  events: number;
  visits: number;
  deliveries: number;
}

async function drain(step: () => Promise<number>, pace: RetentionPace): Promise<number> {
  let total = 0;
  for (;;) {
    const started = performance.now();
    const n = await step();
    total += n;
    if (n < pace.batch) return total;
    // leave the database (and, embedded, its one connection) to requests between batches
    await sleep((performance.now() - started) * pace.pauseFactor);
  }
}

/** Deletes what every app's retention period has expired, as of `clock()`; returns what went, per app. */
export async function enforceRetention(
  db: Db,
  clock: Clock,
  pace: RetentionPace = { batch: RETENTION_BATCH, pauseFactor: RETENTION_PAUSE_FACTOR },
): Promise<RetentionOutcome[]> {
  const now = clock().getTime();
  const outcomes: RetentionOutcome[] = [];
  for (const app of await appsWithRetention(db)) {
    const before = new Date(now - app.retention_days * DAY_MS);
    const outcome: RetentionOutcome = {
      app_id: app.id,
      before: before.toISOString(),
      // A batch that lost a deadlock to a concurrent writer rolled back whole: it runs again.
      events: await drain(() => retryOnConflict(() => deleteExpiredEvents(db, app.id, before, pace.batch)), pace),
      visits: await drain(() => deleteExpiredRows(db, 'visits', app.id, before, pace.batch), pace),
      deliveries: await drain(() => deleteExpiredRows(db, 'push_deliveries', app.id, before, pace.batch), pace),
    };
    await deleteEmptyDailyCounts(db, app.id, before.toISOString().slice(0, 10));
    outcomes.push(outcome);
  }
  return outcomes;
}
