// The engagement figures (queries/engagement.ts) over the activity rollup: the same functions and
// answers, for windows of whole local days in the rollup's time zone (engagement.ts uses them
// only when the app's rollup is ready in the organization's zone).
import type { Knex } from 'knex';
import { LONGEST_WINDOW_DAYS } from '../../storage/migrations/026-activity-days.js';
import { timedRows } from '../../storage/timed.js';
import { daysBetween } from '../../time.js';
import type { Window } from './engagement.js';
import { windowUsers } from './rollup-days.js';
import { deltaKeys, firstActiveSets, pairs } from './rollup-pairs.js';

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
 * `days`, how many of them were active on the Nth local day after their first day.
 */
export async function dayRetention(
  db: Knex,
  w: Window,
  offsets: readonly number[],
): Promise<{ cohort: number; retained: number[] }> {
  const sets = firstActiveSets(w.appId, w.timeZone, days(w), w.members);
  const columns = offsets.map((_, i) => `count(*) filter (where c.days[1] + ?::int = any(c.days)) as r${i}`);
  const [row] = await timedRows<Record<string, string>>(
    db,
    w.timeoutMs,
    `with ${sets.sql} select count(*) as cohort${columns.map((c) => `, ${c}`).join('')} from sets c`,
    [...sets.bindings, ...offsets],
  );
  return { cohort: Number(row?.cohort ?? 0), retained: offsets.map((_, i) => Number(row?.[`r${i}`] ?? 0)) };
}
