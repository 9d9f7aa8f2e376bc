// The metrics that need only daily figures, over the per-app daily rows of migration 026
// (`app_days`, `app_day_gaps`): one row a day instead of one a user and day. Each query adds what
// the deltas not folded yet change (the CTE `k`: the users they touch, their folded rows against
// their folded rows plus the deltas), so the figures are exact at every moment, as with user_days.
import type { Db } from '../../storage/handle.js';
import { LONGEST_WINDOW_DAYS } from '../../storage/migrations/026-activity-days.js';
import { timedRows as rows } from '../../storage/timed.js';
import { type MetricRange, unitSql } from './metrics.js';
import { deltaKeys, type Fragment } from './rollup-pairs.js';

const KEY = `'YYYY-MM-DD HH24:MI'`;

/**
 * The users the unfolded deltas touch, each with two sets of active (`events`) or paying
 * (`revenue_events`) days: with the deltas (sign +1) and without (sign -1), as CTE
 * `sets(user_id, day, sign)`; within [lo, hi) when a range is given, else over their whole
 * history. Counting a figure over both sets, signed, gives the change the deltas make. Needs `k`.
 */
export function deltaUserSets(appId: string, col: 'events' | 'revenue_events', range?: { lo: string; hi: string }) {
  const within = (alias: string) => (range ? ` and ${alias}.day >= ?::date and ${alias}.day < ?::date` : '');
  const bounds = range ? [range.lo, range.hi] : [];
  return {
    sql: `kr as (select * from k where true${within('k')}),
     folded as (select u.user_id, u.day, u.${col} as n from user_days u
                where u.app_id = ?::uuid${within('u')} and u.user_id in (select user_id from kr)),
     sets as (
       select user_id, day, -1 as sign from folded where n > 0
       union all
       select coalesce(f.user_id, kr.user_id), coalesce(f.day, kr.day), 1
       from folded f full join kr on kr.user_id = f.user_id and kr.day = f.day
       where coalesce(f.n, 0) + coalesce(kr.${col}, 0) > 0)`,
    bindings: [...bounds, appId, ...bounds],
  };
}

/**
 * Per day in [lo, hi): the change the unfolded deltas make to the users active (`events`) or
 * paying (`revenue_events`) that day, as CTE `adj(day, n)`. Needs `k`.
 */
const adjustment = (col: 'events' | 'revenue_events') => `adj as (
    select k.day, sum(((k.${col} + coalesce(u.${col}, 0)) > 0)::int - (coalesce(u.${col}, 0) > 0)::int) as n
    from k left join user_days u on u.app_id = ?::uuid and u.day = k.day and u.user_id = k.user_id
    where k.day >= ?::date and k.day < ?::date group by k.day)`;

/** Users active (or paying) per day in [lo, hi): the daily rows plus the deltas' change. */
export async function usersPerDay(
  db: Db,
  appId: string,
  r: MetricRange,
  paying: boolean,
): Promise<Map<string, number>> {
  const k = deltaKeys(appId, r.timeZone);
  const found = await rows<{ k: string; n: string }>(
    db,
    r.timeoutMs,
    `with ${k.sql}, ${adjustment(paying ? 'revenue_events' : 'events')}
     select to_char(day::timestamp, ${KEY}) as k, sum(n) as n from (
       select day, ${paying ? 'paying' : 'active'} as n from app_days where app_id = ?::uuid and day >= ?::date and day < ?::date
       union all select day, n from adj) s
     group by day`,
    [...k.bindings, appId, r.lo, r.hi, appId, r.lo, r.hi],
  );
  return new Map(found.map((row) => [row.k, Number(row.n)]));
}

/**
 * Revenue per bucket: the daily sums plus the deltas' (signed) sums, all of them. (A user's day
 * whose deltas net to no events carrying revenue can still change its revenue: one such event
 * deleted and another written before the fold.)
 */
export async function revenuePerBucket(db: Db, appId: string, r: MetricRange): Promise<Map<string, number>> {
  const k = deltaKeys(appId, r.timeZone);
  const found = await rows<{ k: string; revenue: string | null }>(
    db,
    r.timeoutMs,
    `with ${k.sql}
     select to_char(date_trunc('${unitSql(r.unit)}', day::timestamp), ${KEY}) as k, sum(revenue) as revenue
     from (select day, revenue from app_days where app_id = ?::uuid and day >= ?::date and day < ?::date
           union all
           select day, revenue from k where day >= ?::date and day < ?::date) s
     group by 1`,
    [...k.bindings, appId, r.lo, r.hi, r.lo, r.hi],
  );
  return new Map(found.map((row) => [row.k, Number(row.revenue ?? 0)]));
}

/**
 * As queries/metrics.ts `activityWindowEdges` at a resolution of days, for windows of up to 30
 * days: each active day d opens a window at d and closes it at d + W, and each pair of one user's
 * consecutive active days (p, a) less than W apart takes back the overlap (from a to p + W). The
 * users with unfolded deltas are counted again from their rows: their sets of active days with the
 * deltas (sign +1) against without (sign -1), by the same rule.
 */
export async function activityWindowEdges(
  db: Db,
  appId: string,
  r: MetricRange,
  windowDays: number,
): Promise<{ at: string; delta: number }[]> {
  const w = Math.floor(windowDays);
  if (w < 1 || w > LONGEST_WINDOW_DAYS) throw new Error(`windows of 1 to ${LONGEST_WINDOW_DAYS} days only (got ${w})`);
  const k = deltaKeys(appId, r.timeZone);
  const sets = deltaUserSets(appId, 'events', r);
  const found = await rows<{ t: string; n: string }>(
    db,
    r.timeoutMs,
    `with ${k.sql}, ${sets.sql},
     set_pairs as (
       select sign, day as a, lag(day) over (partition by user_id, sign order by day) as p from sets),
     days as (select day, active from app_days where app_id = ?::uuid and day >= ?::date and day < ?::date),
     gaps as (select day, gap, pairs from app_day_gaps
              where app_id = ?::uuid and day >= ?::date and day + gap < ?::date and gap < ${w} and pairs <> 0),
     edges as (
       select day as t, active as n from days
       union all select day + ${w}, -active from days
       union all select day + gap, -pairs from gaps
       union all select day + ${w}, pairs from gaps
       union all select day, sign from sets
       union all select day + ${w}, -sign from sets
       union all select a, -sign from set_pairs where a - p < ${w}
       union all select p + ${w}, sign from set_pairs where a - p < ${w})
     select to_char(t::timestamp, ${KEY}) as t, sum(n) as n from edges group by t having sum(n) <> 0 order by t`,
    [...k.bindings, ...sets.bindings, appId, r.lo, r.hi, appId, r.lo, r.hi],
  );
  return found.map((row) => ({ at: row.t, delta: Number(row.n) }));
}

/**
 * Distinct users active (or paying) per whole week or month in [lo, hi) (both bucket starts): the
 * per-period rows plus the change the unfolded deltas make (the users they touch, counted per
 * period with and without them).
 */
export async function usersPerPeriod(
  db: Db,
  appId: string,
  r: MetricRange & { unit: 'week' | 'month' },
  paying: boolean,
): Promise<Map<string, number>> {
  const k = deltaKeys(appId, r.timeZone);
  const sets = deltaUserSets(appId, paying ? 'revenue_events' : 'events', r);
  const found = await rows<{ k: string; n: string }>(
    db,
    r.timeoutMs,
    `with ${k.sql}, ${sets.sql},
     adj as (select b, sum(sign) as n from (
       select distinct user_id, sign, date_trunc('${unitSql(r.unit)}', day::timestamp) as b from sets) s group by b)
     select to_char(b, ${KEY}) as k, sum(n) as n from (
       select start::timestamp as b, ${paying ? 'paying' : 'active'} as n from app_periods
       where app_id = ?::uuid and unit = ? and start >= ?::date and start < ?::date
       union all select b, n from adj) s
     group by b`,
    [...k.bindings, ...sets.bindings, appId, r.unit, r.lo, r.hi],
  );
  return new Map(found.map((row) => [row.k, Number(row.n)]));
}

/** Per whole day, week or month: users active, active in the next one too, first active in it, and of those active in the next. */
export interface PeriodFlags {
  active: number;
  continued: number;
  firstUsers: number;
  firstNext: number;
}

/**
 * PeriodFlags per whole bucket starting in [lo, hi) (bucket starts): the per-app rows plus the
 * change the unfolded deltas make, from their users' whole histories (a late event can change a
 * user's first active day).
 */
export async function periodFlags(
  db: Db,
  appId: string,
  r: MetricRange & { unit: 'day' | 'week' | 'month' },
): Promise<Map<string, PeriodFlags>> {
  const unit = unitSql(r.unit);
  const k = deltaKeys(appId, r.timeZone);
  const sets = deltaUserSets(appId, 'events');
  const base =
    r.unit === 'day'
      ? `select d.day as b, d.active, coalesce(g.pairs, 0) as continued, d.first_users, d.first_next
         from app_days d left join app_day_gaps g on g.app_id = d.app_id and g.day = d.day and g.gap = 1
         where d.app_id = ?::uuid and d.day >= ?::date and d.day < ?::date`
      : `select start as b, active, continued, first_users, first_next from app_periods
         where app_id = ?::uuid and unit = '${unit}' and start >= ?::date and start < ?::date`;
  const found = await rows<{ k: string; active: string; continued: string; first_users: string; first_next: string }>(
    db,
    r.timeoutMs,
    `with ${k.sql}, ${sets.sql},
     buckets as (select distinct user_id, sign, date_trunc('${unit}', day::timestamp)::date as b from sets),
     flags as (
       select b, sign, row_number() over w = 1 as first,
              coalesce(lead(b) over w = (b + interval '1 ${unit}')::date, false) as cont
       from buckets window w as (partition by user_id, sign order by b)),
     adj as (
       select b, sum(sign) as active, coalesce(sum(sign) filter (where cont), 0) as continued,
              coalesce(sum(sign) filter (where first), 0) as first_users,
              coalesce(sum(sign) filter (where first and cont), 0) as first_next
       from flags where b >= ?::date and b < ?::date group by b)
     select to_char(b::timestamp, ${KEY}) as k, sum(active) as active, sum(continued) as continued,
            sum(first_users) as first_users, sum(first_next) as first_next
     from (${base} union all select * from adj) s group by b`,
    [...k.bindings, ...sets.bindings, r.lo, r.hi, appId, r.lo, r.hi],
  );
  return new Map(
    found.map((row) => [
      row.k,
      {
        active: Number(row.active),
        continued: Number(row.continued),
        firstUsers: Number(row.first_users),
        firstNext: Number(row.first_next),
      },
    ]),
  );
}

/**
 * For a window of whole local days [from, to) of at most 30 days: the distinct users active in it
 * (the window's daily counts less each user's consecutive active days inside it) and the sum of its
 * daily active users, from the per-app rows plus what the unfolded deltas change (their users
 * counted with and without them).
 */
export async function windowUsers(
  db: Db,
  appId: string,
  w: { timeZone: string; from: string; to: string; timeoutMs: number },
): Promise<{ users: number; userDays: number }> {
  const win = windowUsersSql(appId, w);
  const [row] = await rows<{ users: string; user_days: string }>(
    db,
    w.timeoutMs,
    `with ${win.sql} select users, user_days from window_users`,
    win.bindings,
  );
  return { users: Number(row?.users ?? 0), userDays: Number(row?.user_days ?? 0) };
}

/**
 * The CTEs of `windowUsers`, ending in `window_users(users, user_days)`; they include `k` and the
 * delta users' `kr` and `sets` of deltaUserSets, within the window.
 */
export function windowUsersSql(appId: string, w: { timeZone: string; from: string; to: string }): Fragment {
  const k = deltaKeys(appId, w.timeZone);
  const sets = deltaUserSets(appId, 'events', { lo: w.from, hi: w.to });
  return {
    sql: `${k.sql}, ${sets.sql},
     days as (select coalesce(sum(active), 0) as n from app_days where app_id = ?::uuid and day >= ?::date and day < ?::date),
     gaps as (select coalesce(sum(pairs), 0) as n from app_day_gaps
              where app_id = ?::uuid and day >= ?::date and day + gap < ?::date),
     window_users as (
       select (select n from days) - (select n from gaps)
                + (select count(distinct user_id) from sets where sign > 0)
                - (select count(distinct user_id) from sets where sign < 0) as users,
              (select n from days) + (select coalesce(sum(sign), 0) from sets) as user_days)`,
    bindings: [...k.bindings, ...sets.bindings, appId, w.from, w.to, appId, w.from, w.to],
  };
}
