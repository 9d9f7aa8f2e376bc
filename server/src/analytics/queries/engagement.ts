// Engagement figures over human events (bot traffic excluded), read in the organization's time
// zone: distinct active users in a window, active (user, day) pairs, and day-N retention of the
// users first seen in a period. Times are naive local timestamps (`YYYY-MM-DD HH:MM:SS`) turned
// into instants with `AT TIME ZONE`. `members`, when given, restricts every figure to the users
// with those external ids (an audience).
import type { Knex } from 'knex';
import { timedRows } from '../../storage/timed.js';

export interface Window {
  appId: string;
  timeZone: string;
  /** Inclusive start and exclusive end, local times. */
  from: string;
  to: string;
  members?: readonly string[];
  timeoutMs: number;
}

const HUMAN = 'e.app_id = ?::uuid and not e.is_bot';
const IN_WINDOW = 'e.created_at >= (?::timestamp at time zone ?) and e.created_at < (?::timestamp at time zone ?)';

function memberFilter(w: Window): { sql: string; bindings: unknown[] } {
  if (w.members === undefined) return { sql: '', bindings: [] };
  return {
    sql: ' and e.user_id in (select id from users where app_id = ?::uuid and external_id = any(?::text[]))',
    bindings: [w.appId, [...w.members]],
  };
}

/** Distinct users with at least one human event in the window. */
export async function activeUsers(db: Knex, w: Window): Promise<number> {
  const m = memberFilter(w);
  const [row] = await timedRows<{ n: string }>(
    db,
    w.timeoutMs,
    `select count(distinct e.user_id) as n from events e where ${HUMAN} and ${IN_WINDOW}${m.sql}`,
    [w.appId, w.from, w.timeZone, w.to, w.timeZone, ...m.bindings],
  );
  return Number(row?.n ?? 0);
}

/** Distinct (user, local day) pairs of activity in the window: the sum of its daily active users. */
export async function activeUserDays(db: Knex, w: Window): Promise<number> {
  const m = memberFilter(w);
  const [row] = await timedRows<{ n: string }>(
    db,
    w.timeoutMs,
    `select count(*) as n from (
       select distinct e.user_id, (e.created_at at time zone ?)::date from events e
       where ${HUMAN} and ${IN_WINDOW}${m.sql}
     ) s`,
    [w.timeZone, w.appId, w.from, w.timeZone, w.to, w.timeZone, ...m.bindings],
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
  days: readonly number[],
): Promise<{ cohort: number; retained: number[] }> {
  const m = memberFilter(w);
  const columns = days.map(
    (_, i) => `count(*) filter (where exists (
      select 1 from events e where ${HUMAN} and e.user_id = c.user_id
        and e.created_at >= ((c.d + ?::int)::timestamp at time zone ?)
        and e.created_at < ((c.d + ?::int + 1)::timestamp at time zone ?))) as r${i}`,
  );
  const [row] = await timedRows<Record<string, string>>(
    db,
    w.timeoutMs,
    `with firsts as (
       select e.user_id, min(e.created_at) as f from events e
       where ${HUMAN} and ${IN_WINDOW}${m.sql} group by e.user_id
     ), cohort as (
       select f.user_id, (f.f at time zone ?)::date as d from firsts f
       where not exists (
         select 1 from events e where ${HUMAN} and e.user_id = f.user_id
           and e.created_at < (?::timestamp at time zone ?))
     )
     select count(*) as cohort${columns.map((c) => `, ${c}`).join('')} from cohort c`,
    [
      w.appId,
      w.from,
      w.timeZone,
      w.to,
      w.timeZone,
      ...m.bindings,
      w.timeZone,
      w.appId,
      w.from,
      w.timeZone,
      ...days.flatMap((n) => [w.appId, n, w.timeZone, n, w.timeZone]),
    ],
  );
  return { cohort: Number(row?.cohort ?? 0), retained: days.map((_, i) => Number(row?.[`r${i}`] ?? 0)) };
}
