// Queries for retention: an app's events, visits and push deliveries older than its retention
// period, deleted a bounded batch per statement (each its own short transaction, so ingestion is
// never locked out for long). Deleting events also takes them out of what was counted from them:
// the users' event counts, the event dictionary's volumes and the daily counts. Per-app (app id
// an explicit argument) except `appsWithRetention`, which lists the apps that have a period.
import type { Knex } from 'knex';

/** Not per-app by nature: the apps that keep data for a limited period. */
export const appsWithRetention = (db: Knex): Promise<{ id: string; retention_days: number }[]> =>
  db('apps').whereNotNull('retention_days').orderBy('id').select('id', 'retention_days');

/**
 * Deletes up to `limit` of the app's events whose time is before `before`, oldest first, with
 * their share of the derived counts, in one statement; returns how many went.
 */
export async function deleteExpiredEvents(db: Knex, appId: string, before: Date, limit: number): Promise<number> {
  const { rows } = await db.raw(
    `with gone as (
       delete from events e
       using (select id from events where app_id = ?::uuid and created_at < ?::timestamptz
              order by created_at limit ?) b
       where e.app_id = ?::uuid and e.id = b.id
       returning e.user_id, e.event_name, e.created_at
     ), per_user as (
       update users u set event_count = greatest(u.event_count - g.n, 0)
       from (select user_id, count(*) as n from gone group by user_id) g
       where u.app_id = ?::uuid and u.id = g.user_id
       returning 1
     ), per_name as (
       update event_definitions d set volume = greatest(d.volume - g.n, 0)
       from (select event_name, count(*) as n from gone group by event_name) g
       where d.app_id = ?::uuid and d.event_name = g.event_name
       returning 1
     ), per_day as (
       update event_daily_counts c set count = greatest(c.count - g.n, 0)
       from (select event_name, (created_at at time zone 'UTC')::date as day, count(*) as n from gone group by 1, 2) g
       where c.app_id = ?::uuid and c.event_name = g.event_name and c.day = g.day
       returning 1
     )
     select (select count(*) from gone) as n`,
    [appId, before, limit, appId, appId, appId, appId],
  );
  return Number((rows as { n: string }[])[0]?.n ?? 0);
}

/** Removes the app's daily counts emptied by retention, up to and including `lastDay` (YYYY-MM-DD). */
export async function deleteEmptyDailyCounts(db: Knex, appId: string, lastDay: string): Promise<number> {
  return db('event_daily_counts')
    .where({ app_id: appId })
    .andWhere('day', '<=', lastDay)
    .andWhere('count', '<=', 0)
    .delete();
}

/** Deletes up to `limit` of the app's visits or push deliveries from before `before`; returns how many. */
export async function deleteExpiredRows(
  db: Knex,
  table: 'visits' | 'push_deliveries',
  appId: string,
  before: Date,
  limit: number,
): Promise<number> {
  const { rowCount } = await db.raw(
    `delete from ${table} t
     using (select id from ${table} where app_id = ?::uuid and created_at < ?::timestamptz order by created_at limit ?) b
     where t.app_id = ?::uuid and t.id = b.id`,
    [appId, before, limit, appId],
  );
  return Number(rowCount ?? 0);
}
