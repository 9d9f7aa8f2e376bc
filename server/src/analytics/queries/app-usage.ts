// What the MCP app resources read: an app's usage totals, its most frequent events (bot traffic
// excluded, like the SQL sandbox's `events` relation) and its released versions.
import type { Knex } from 'knex';
import { timedRows } from '../../storage/timed.js';

export interface AppTotals {
  users: number;
  events: number;
  lastActivity: Date | null;
}

/** Users of the app, its human events and the time of the latest one. */
export async function appTotals(db: Knex, appId: string, timeoutMs: number): Promise<AppTotals> {
  const [row] = await timedRows<{ users: string; events: string; last_activity: Date | null }>(
    db,
    timeoutMs,
    `select (select count(*) from users where app_id = ?::uuid) as users,
            count(*) as events, max(created_at) as last_activity
     from events where app_id = ?::uuid and not is_bot`,
    [appId, appId],
  );
  return { users: Number(row?.users ?? 0), events: Number(row?.events ?? 0), lastActivity: row?.last_activity ?? null };
}

/** The most frequent event names of the app's human events, most frequent first (ties by name). */
export async function topEventNames(
  db: Knex,
  appId: string,
  limit: number,
  timeoutMs: number,
): Promise<{ name: string; count: number }[]> {
  const rows = await timedRows<{ name: string; count: string }>(
    db,
    timeoutMs,
    `select event_name as name, count(*) as count from events where app_id = ?::uuid and not is_bot
     group by event_name order by count(*) desc, event_name limit ?`,
    [appId, limit],
  );
  return rows.map((r) => ({ name: r.name, count: Number(r.count) }));
}

export interface AppVersionRow {
  id: string;
  app_id: string;
  version: string;
  release_notes: string | null;
  released_at: Date;
  created_by: string | null;
}

/** The app's versions, latest release first. */
export const listAppVersions = (db: Knex, appId: string) =>
  db<AppVersionRow>('app_versions')
    .where({ app_id: appId })
    .orderBy([
      { column: 'released_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
