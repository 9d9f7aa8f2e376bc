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
 * their share of the derived counts, in one transaction; returns how many went. The counters are
 * taken in the order ingestion takes them (users by id, then event names, then name and day), so
 * the two never deadlock over them.
 */
export async function deleteExpiredEvents(db: Knex, appId: string, before: Date, limit: number): Promise<number> {
  return db.transaction(async (trx) => {
    const { rows } = await trx.raw(
      `with gone as (
         delete from events e
         using (select id from events where app_id = ?::uuid and created_at < ?::timestamptz
                order by created_at limit ?) b
         where e.app_id = ?::uuid and e.id = b.id
         returning e.user_id, e.event_name, (e.created_at at time zone 'UTC')::date as day
       )
       select user_id, event_name, to_char(day, 'YYYY-MM-DD') as day, count(*)::integer as n from gone group by 1, 2, 3`,
      [appId, before, limit, appId],
    );
    const gone = rows as { user_id: string; event_name: string; day: string; n: number }[];
    if (gone.length === 0) return 0;
    // Totals per key (PostgreSQL sorts them, in its own collation, as it locks their rows).
    const sum = (key: (g: (typeof gone)[number]) => string) => {
      const totals = new Map<string, number>();
      for (const g of gone) totals.set(key(g), (totals.get(key(g)) ?? 0) + g.n);
      return [...totals];
    };
    const perUser = sum((g) => g.user_id);
    const perName = sum((g) => g.event_name);
    const perDay = sum((g) => JSON.stringify([g.event_name, g.day]));
    await trx.raw(
      `update users u set event_count = greatest(u.event_count - g.n, 0)
       from (select l.id, g.n from (select * from unnest(?::uuid[], ?::integer[]) x(id, n) order by id) g
             join lateral (select id from users where app_id = ?::uuid and id = g.id for no key update) l on true) g
       where u.app_id = ?::uuid and u.id = g.id`,
      [perUser.map(([id]) => id), perUser.map(([, n]) => n), appId, appId],
    );
    await trx.raw(
      `update event_definitions d set volume = greatest(d.volume - g.n, 0)
       from (select l.event_name, g.n from (select * from unnest(?::text[], ?::integer[]) x(name, n) order by name) g
             join lateral (select event_name from event_definitions where app_id = ?::uuid and event_name = g.name
                           for no key update) l on true) g
       where d.app_id = ?::uuid and d.event_name = g.event_name`,
      [perName.map(([name]) => name), perName.map(([, n]) => n), appId, appId],
    );
    const days = perDay.map(([key, n]) => [...(JSON.parse(key) as [string, string]), n] as const);
    await trx.raw(
      `update event_daily_counts c set count = greatest(c.count - g.n, 0)
       from (select l.event_name, l.day, g.n
             from (select * from unnest(?::text[], ?::date[], ?::integer[]) x(name, day, n) order by name, day) g
             join lateral (select event_name, day from event_daily_counts
                           where app_id = ?::uuid and event_name = g.name and day = g.day for no key update) l on true) g
       where c.app_id = ?::uuid and c.event_name = g.event_name and c.day = g.day`,
      [days.map((d) => d[0]), days.map((d) => d[1]), days.map((d) => d[2]), appId, appId],
    );
    return perUser.reduce((total, [, n]) => total + n, 0);
  });
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
