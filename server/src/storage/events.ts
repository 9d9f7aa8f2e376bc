// Queries over events and what is derived from them at ingestion (dedup rows, the event
// dictionary). Every function takes the app id explicitly.
import type { Knex } from 'knex';
import { timedRows } from './timed.js';

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

/**
 * What autovacuum does on PostgreSQL, for the embedded database, which runs none: refreshes the
 * planner's statistics of the tables the sandbox reads (its cost check rests on them; the rollups'
 * tables that questions read among them, without which the planner guesses a few rows where there
 * are a row a user or a slot), reclaims the dead rows that counter updates leave in `users`, and
 * marks pages all-visible so that indexes that cover a query (migration 029) answer it without
 * reading the table's rows. After the first run it only visits pages changed since the last one.
 */
export async function refreshSandboxStatistics(knex: Knex): Promise<void> {
  await knex.raw(
    'VACUUM (ANALYZE) public.events, public.users, public.user_days, public.user_totals, public.app_days, public.app_day_events, public.event_slots',
  );
}

/**
 * The tables that ingestion looks rows up in, by index, on every group: `users` by external id,
 * `user_aliases` and `event_dedup` by their keys.
 */
const LOOKED_UP_TABLES = ['users', 'user_aliases', 'event_dedup'] as const;

/**
 * Analyzes each table ingestion looks rows up in that has never been analyzed since it has rows, or
 * that has more than doubled in pages since it last was; returns those it analyzed.
 *
 * Why: until a table's first analysis the planner takes `app_id = $1` to match about one row, so it
 * finds an app's user by external id through the (app_id, id) index, reading every user of the app
 * for each identifier. That made a group of 100 events with 1,000 users take 14 ms where 0.5 ms
 * does. Autovacuum analyzes within a minute on PostgreSQL; the embedded database runs none, and its
 * statistics job runs every ten minutes. Called by the fold job, which ingestion wakes within
 * seconds; the doubling rule keeps the analyses to a few over a table's life, as it grows. Another
 * analysis or vacuum of the same table (autovacuum's) makes it skip that table for this time.
 */
export async function analyzeGrownTables(knex: Knex): Promise<string[]> {
  const { rows } = await knex.raw(
    `select c.relname as name from pg_class c
     where c.oid = any(?::regclass[])
       and pg_relation_size(c.oid) > 0
       and (c.reltuples < 0
            or not exists (select 1 from pg_stats s where s.schemaname = 'public' and s.tablename = c.relname)
            or pg_relation_size(c.oid) / current_setting('block_size')::int > 2 * c.relpages + 4)
     order by 1`,
    [LOOKED_UP_TABLES.map((t) => `public.${t}`)],
  );
  const analyzed: string[] = [];
  for (const { name } of rows as { name: (typeof LOOKED_UP_TABLES)[number] }[]) {
    if (!LOOKED_UP_TABLES.includes(name)) continue;
    try {
      await knex.transaction(async (tx) => {
        await tx.raw("set local lock_timeout = '200ms'");
        await tx.raw(`analyze public.${name}`);
      });
      analyzed.push(name);
    } catch (err) {
      if ((err as { code?: string }).code !== '55P03') throw err; // lock_not_available: analyzed meanwhile
    }
  }
  return analyzed;
}

/** Filters of an event search. Times are naive local timestamps read in `timeZone`. */
export interface EventFilter {
  eventName?: string;
  /** Internal user id. */
  userId?: string;
  /** Inclusive lower bound (local time), exclusive upper bound (local time). */
  from?: string;
  to?: string;
  timeZone: string;
}

export interface EventRecordRow {
  id: string;
  app_id: string;
  user_id: string;
  event_name: string;
  properties: Record<string, unknown>;
  created_at: Date;
}

function eventSearchWhere(appId: string, f: EventFilter): { sql: string; bindings: unknown[] } {
  const parts = ['e.app_id = ?::uuid', 'not e.is_bot'];
  const bindings: unknown[] = [appId];
  if (f.eventName !== undefined) {
    parts.push('e.event_name = ?');
    bindings.push(f.eventName);
  }
  if (f.userId !== undefined) {
    parts.push('e.user_id = ?::uuid');
    bindings.push(f.userId);
  }
  if (f.from !== undefined) {
    parts.push('e.created_at >= (?::timestamp at time zone ?)');
    bindings.push(f.from, f.timeZone);
  }
  if (f.to !== undefined) {
    parts.push('e.created_at < (?::timestamp at time zone ?)');
    bindings.push(f.to, f.timeZone);
  }
  return { sql: parts.join(' and '), bindings };
}

/** One page of the app's human events matching the filter, newest first, with the user's external id. */
export async function searchEvents(
  db: Knex,
  appId: string,
  filter: EventFilter,
  page: { limit: number; offset: number },
  timeoutMs: number,
): Promise<EventRecordRow[]> {
  const where = eventSearchWhere(appId, filter);
  return timedRows<EventRecordRow>(
    db,
    timeoutMs,
    `select e.id, e.app_id, u.external_id as user_id, e.event_name, e.properties, e.created_at
     from events e join users u on u.app_id = e.app_id and u.id = e.user_id
     where ${where.sql} order by e.created_at desc, e.id desc limit ? offset ?`,
    [...where.bindings, page.limit, page.offset],
  );
}

/** How many of the app's human events match the filter. */
export async function countEvents(db: Knex, appId: string, filter: EventFilter, timeoutMs: number): Promise<number> {
  const where = eventSearchWhere(appId, filter);
  const [row] = await timedRows<{ n: string }>(
    db,
    timeoutMs,
    `select count(*) as n from events e where ${where.sql}`,
    where.bindings,
  );
  return Number(row?.n ?? 0);
}
