// The engagement figures (queries/engagement.ts) over the activity rollup: the same functions and
// answers, for windows of whole local days in the rollup's time zone (engagement.ts uses them
// only when the app's rollup is ready in the organization's zone).
import type { Knex } from 'knex';
import { LONGEST_WINDOW_DAYS } from '../../storage/migrations/026-activity-days.js';
import { timedRows } from '../../storage/timed.js';
import { daysBetween } from '../../time.js';
import type { Window } from './engagement.js';
import { windowUsers } from './rollup-days.js';
import { deltaKeys, pairs } from './rollup-pairs.js';

const days = (w: Window) => ({ lo: w.from, hi: w.to });

/** Whether the per-app daily rows answer for the window: all users, at most 30 whole days. */
const fromDays = (w: Window) =>
  w.members === undefined && daysBetween(w.from.slice(0, 10), w.to.slice(0, 10)) <= LONGEST_WINDOW_DAYS;

/** Distinct users with at least one human event in the window. */
export async function activeUsers(db: Knex, w: Window): Promise<number> {
  if (fromDays(w)) return (await windowUsers(db, w.appId, w)).users;
  const k = deltaKeys(w.appId, w.timeZone);
  const p = pairs(w.appId, days(w), { members: w.members });
  const [row] = await timedRows<{ n: string }>(
    db,
    w.timeoutMs,
    `with ${k.sql} select count(distinct user_id) as n from (${p.sql}) p`,
    [...k.bindings, ...p.bindings],
  );
  return Number(row?.n ?? 0);
}

/** Distinct (user, local day) pairs of activity in the window: the sum of its daily active users. */
export async function activeUserDays(db: Knex, w: Window): Promise<number> {
  if (fromDays(w)) return (await windowUsers(db, w.appId, w)).userDays;
  const k = deltaKeys(w.appId, w.timeZone);
  const p = pairs(w.appId, days(w), { members: w.members });
  const [row] = await timedRows<{ n: string }>(
    db,
    w.timeoutMs,
    `with ${k.sql} select count(*) as n from (${p.sql}) p`,
    [...k.bindings, ...p.bindings],
  );
  return Number(row?.n ?? 0);
}

/**
 * The users whose first human event ever falls in the window (the cohort), and for each N of
 * `days`, how many of them were active on the Nth local day after their first day. Each user's
 * active days are kept in order in `user_active_days` (migration 026), so the cohort is the users
 * whose first kept day is in the window, one row each; the users with unfolded deltas are counted
 * from their folded rows plus the deltas instead.
 */
export async function dayRetention(
  db: Knex,
  w: Window,
  offsets: readonly number[],
): Promise<{ cohort: number; retained: number[] }> {
  const k = deltaKeys(w.appId, w.timeZone);
  const members = (alias: string) =>
    w.members
      ? ` and ${alias}.user_id in (select id from users where app_id = ?::uuid and external_id = any(?::text[]))`
      : '';
  const memberBindings = w.members ? [w.appId, [...w.members]] : [];
  const columns = offsets.map((_, i) => `count(*) filter (where c.days[1] + ?::int = any(c.days)) as r${i}`);
  const [row] = await timedRows<Record<string, string>>(
    db,
    w.timeoutMs,
    `with ${k.sql},
     touched as (select distinct user_id from k),
     fresh as (
       select coalesce(u.user_id, t.user_id) as user_id, coalesce(u.day, t.day) as day
       from (select d.user_id, d.day, d.events from user_days d
             where d.app_id = ?::uuid and d.user_id in (select user_id from touched)) u
       full join k t on t.user_id = u.user_id and t.day = u.day
       where coalesce(u.events, 0) + coalesce(t.events, 0) > 0),
     sets as (
       select a.user_id, a.days from user_active_days a
       where a.app_id = ?::uuid and a.days[1] >= ?::date and a.days[1] < ?::date
         and not exists (select 1 from touched t where t.user_id = a.user_id)${members('a')}
       union all
       select f.user_id, f.days from (select user_id, array_agg(day order by day) as days from fresh group by user_id) f
       where f.days[1] >= ?::date and f.days[1] < ?::date${members('f')})
     select count(*) as cohort${columns.map((c) => `, ${c}`).join('')} from sets c`,
    [...k.bindings, w.appId, w.appId, w.from, w.to, ...memberBindings, w.from, w.to, ...memberBindings, ...offsets],
  );
  return { cohort: Number(row?.cohort ?? 0), retained: offsets.map((_, i) => Number(row?.[`r${i}`] ?? 0)) };
}
