// Queries over events and what is derived from them at ingestion (dedup rows, the event
// dictionary). Every function takes the app id explicitly.
import type { Knex } from 'knex';

/** The insert_id dedup window: a repeat within it is not stored again. */
export const DEDUP_WINDOW_DAYS = 7;

/**
 * Deletes one app's dedup rows received before `before`, at most `batch` at a time (so no long
 * lock is held); returns how many went.
 */
export async function purgeDedupRowsBefore(knex: Knex, appId: string, before: Date, batch = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await knex('event_dedup')
      .where({ app_id: appId })
      .whereIn(
        'insert_id',
        knex('event_dedup')
          .select('insert_id')
          .where({ app_id: appId })
          .andWhere('received_at', '<', before)
          .limit(batch),
      )
      .del();
    total += deleted;
    if (deleted < batch) return total;
  }
}

/** Refreshes the planner's statistics of the tables the sandbox reads (PGlite runs no autovacuum). */
export async function refreshSandboxStatistics(knex: Knex): Promise<void> {
  await knex.raw('ANALYZE public.events, public.users');
}
