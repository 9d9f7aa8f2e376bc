// Queries for erasing one user: every row that names the user goes, and what was derived from
// the user's events (event dictionary volumes and first/last seen, daily counts, insert_id dedup
// rows) is corrected, inside the caller's transaction. Every query filters by app id.
import type { Knex } from 'knex';

/** The user's row, locked until the transaction ends (waits for event writes to the user to commit). */
export const lockUserForErasure = (trx: Knex.Transaction, appId: string, userId: string) =>
  trx('users').where({ app_id: appId, id: userId }).forUpdate().first('id');

/** Removes the dedup rows of the user's events (a later repeat of their insert_id is a new event). */
export async function deleteUserDedupRows(db: Knex, appId: string, userId: string): Promise<number> {
  const { rowCount } = await db.raw(
    `delete from event_dedup d using events e
     where d.app_id = ?::uuid and e.app_id = ?::uuid and e.user_id = ?::uuid and d.event_id = e.id`,
    [appId, appId, userId],
  );
  return Number(rowCount ?? 0);
}

/** Takes the user's events out of the dictionary volumes and daily counts; returns the names touched. */
export async function subtractUserEventCounts(db: Knex, appId: string, userId: string): Promise<string[]> {
  const { rows } = await db.raw(
    `update event_definitions d set volume = greatest(d.volume - g.n, 0)
     from (select event_name, count(*) as n from events where app_id = ?::uuid and user_id = ?::uuid group by event_name) g
     where d.app_id = ?::uuid and d.event_name = g.event_name
     returning d.event_name`,
    [appId, userId, appId],
  );
  await db.raw(
    `update event_daily_counts c set count = greatest(c.count - g.n, 0)
     from (select event_name, (created_at at time zone 'UTC')::date as day, count(*) as n
           from events where app_id = ?::uuid and user_id = ?::uuid group by 1, 2) g
     where c.app_id = ?::uuid and c.event_name = g.event_name and c.day = g.day`,
    [appId, userId, appId],
  );
  return (rows as { event_name: string }[]).map((r) => r.event_name);
}

/**
 * After events were removed: first/last seen of these names follow the remaining events, and a
 * name nobody documented and no event carries any more leaves the dictionary.
 */
export async function refreshEventDefinitions(db: Knex, appId: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  await db.raw(
    `update event_definitions d set first_seen = x.first, last_seen = x.last
     from (select event_name, min(created_at) as first, max(created_at) as last from events
           where app_id = ?::uuid and event_name = any(?::text[]) group by event_name) x
     where d.app_id = ?::uuid and d.event_name = x.event_name`,
    [appId, names, appId],
  );
  await db.raw(
    `delete from event_definitions d
     where d.app_id = ?::uuid and d.event_name = any(?::text[]) and coalesce(d.description, '') = ''
       and not exists (select 1 from events e where e.app_id = d.app_id and e.event_name = d.event_name)`,
    [appId, names],
  );
  await db.raw(`delete from event_daily_counts where app_id = ?::uuid and event_name = any(?::text[]) and count <= 0`, [
    appId,
    names,
  ]);
}

/** The user's rows in one table, deleted; returns how many. */
export async function deleteUserRows(
  db: Knex,
  table: 'user_aliases' | 'events' | 'visits' | 'push_subscriptions' | 'push_deliveries',
  appId: string,
  userId: string,
): Promise<number> {
  return db(table).where({ app_id: appId, user_id: userId }).delete();
}

/** The user's own row; returns 1 when it was there. */
export const deleteUserRow = (db: Knex, appId: string, userId: string): Promise<number> =>
  db('users').where({ app_id: appId, id: userId }).delete();

/** Marks the app's audience counts stale, so that the next read counts them again. */
export async function markAudienceCountsStale(db: Knex, appId: string): Promise<void> {
  await db('audiences')
    .where({ app_id: appId })
    .update({ counted_at: new Date(0) });
}
