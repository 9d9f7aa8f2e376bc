// The metrics' queries over the activity rollup (migration 024) instead of raw events: the same
// functions, arguments and answers as queries/metrics.ts, for ranges of whole local days in the
// rollup's time zone (metrics.ts uses them only when the app's rollup is ready in the
// organization's zone). Each reads `user_days` plus the deltas not folded yet, in one statement,
// so a fold running meanwhile is seen whole or not at all.
import type { Db } from '../../storage/handle.js';
import { timedRows as rows } from '../../storage/timed.js';
import type { BucketUnit, MetricRange } from './metrics.js';

const UNITS: readonly BucketUnit[] = ['hour', 'day', 'week', 'month'];
function unitSql(unit: BucketUnit): BucketUnit {
  if (!UNITS.includes(unit)) throw new TypeError(`unknown bucket unit ${JSON.stringify(unit)}`);
  return unit;
}

interface Fragment {
  sql: string;
  bindings: unknown[];
}

/** The local day of a delta's slot (every slot lies within one local day). */
const DELTA_DAY = '(d.slot at time zone ?)::date';

/**
 * The (day, user) pairs of the app's activity with day in [lo, hi) (naive local times, whole days),
 * each once: folded rows, and the deltas' pairs that no folded row has yet. `paying`: only pairs
 * with an event carrying revenue.
 */
function pairs(appId: string, r: { lo: string; hi: string; timeZone: string }, paying = false): Fragment {
  const pay = paying ? ' and revenue_events > 0' : '';
  return {
    sql: `select day, user_id from user_days
          where app_id = ?::uuid and day >= ?::date and day < ?::date${pay}
          union all
          select distinct ${DELTA_DAY} as day, d.user_id from activity_deltas d
          where d.app_id = ?::uuid and ${DELTA_DAY} >= ?::date and ${DELTA_DAY} < ?::date${pay.replace('revenue', 'd.revenue')}
            and not exists (select 1 from user_days u where u.app_id = ?::uuid and u.day = ${DELTA_DAY}
                            and u.user_id = d.user_id${pay.replace('revenue', 'u.revenue')})`,
    bindings: [appId, r.lo, r.hi, r.timeZone, appId, r.timeZone, r.lo, r.timeZone, r.hi, appId, r.timeZone],
  };
}

/** The (local hour, user) pairs in [lo, hi), each once, from the rows' hour masks. */
function hourPairs(appId: string, r: { lo: string; hi: string; timeZone: string }): Fragment {
  return {
    sql: `select distinct b, user_id from (
            select day + make_interval(hours => h) as b, user_id from user_days, generate_series(0, 23) h
            where app_id = ?::uuid and day >= ?::timestamp::date and day <= ?::timestamp::date and hours & (1 << h) <> 0
            union all
            select date_trunc('hour', d.slot at time zone ?), d.user_id from activity_deltas d where d.app_id = ?::uuid
          ) x where b >= ?::timestamp and b < ?::timestamp`,
    bindings: [appId, r.lo, r.hi, r.timeZone, appId, r.lo, r.hi],
  };
}

/** Distinct users per bucket over a pairs relation (`day` a date, or `b` a local hour). */
async function distinctPerBucket(db: Db, r: MetricRange, from: Fragment): Promise<Map<string, number>> {
  const bucket = r.unit === 'hour' ? 'b' : `date_trunc('${unitSql(r.unit)}', day::timestamp)`;
  const found = await rows<{ k: string; n: string }>(
    db,
    r.timeoutMs,
    `select to_char(b, 'YYYY-MM-DD HH24:MI') as k, count(*) as n from (
       select distinct ${bucket} as b, user_id from (${from.sql}) p
     ) s group by b`,
    from.bindings,
  );
  return new Map(found.map((row) => [row.k, Number(row.n)]));
}

/** Users with at least one event, per bucket. */
export const activeUsersPerBucket = (db: Db, appId: string, r: MetricRange) =>
  distinctPerBucket(db, r, r.unit === 'hour' ? hourPairs(appId, r) : pairs(appId, r));

/** Users with an event carrying a numeric revenue, per bucket (the default conversion). */
export const payingUsersPerBucket = (db: Db, appId: string, r: MetricRange) =>
  distinctPerBucket(db, r, pairs(appId, r, true));

/** Revenue per bucket (day, week or month). */
export async function revenuePerBucket(db: Db, appId: string, r: MetricRange): Promise<Map<string, number>> {
  const found = await rows<{ k: string; revenue: string | null }>(
    db,
    r.timeoutMs,
    `select to_char(date_trunc('${unitSql(r.unit)}', day::timestamp), 'YYYY-MM-DD HH24:MI') as k, sum(revenue) as revenue
     from (select day, revenue from user_days where app_id = ?::uuid and day >= ?::date and day < ?::date and revenue_events > 0
           union all
           select ${DELTA_DAY}, d.revenue from activity_deltas d
           where d.app_id = ?::uuid and d.revenue_events > 0 and ${DELTA_DAY} >= ?::date and ${DELTA_DAY} < ?::date) s
     group by 1`,
    [appId, r.lo, r.hi, r.timeZone, appId, r.timeZone, r.lo, r.timeZone, r.hi],
  );
  return new Map(found.map((row) => [row.k, Number(row.revenue ?? 0)]));
}

/** As queries/metrics.ts `activityWindowEdges`, at a resolution of days. */
export async function activityWindowEdges(
  db: Db,
  appId: string,
  r: MetricRange,
  windowDays: number,
): Promise<{ at: string; delta: number }[]> {
  const days = Math.floor(windowDays);
  const from = pairs(appId, r);
  const found = await rows<{ t: string; n: string }>(
    db,
    r.timeoutMs,
    `with acts as (select day::timestamp as a, user_id from (${from.sql}) p),
     spans as (
       select greatest(a, lag(a) over (partition by user_id order by a) + interval '${days} days') as lo,
              a + interval '${days} days' as hi
       from acts
     )
     select to_char(t, 'YYYY-MM-DD HH24:MI') as t, sum(n) as n from (
       select lo as t, count(*) as n from spans group by lo
       union all select hi, -count(*) from spans group by hi
     ) d group by t order by t`,
    from.bindings,
  );
  return found.map((row) => ({ at: row.t, delta: Number(row.n) }));
}

/** As queries/metrics.ts `churnPerBucket`. */
export async function churnPerBucket(
  db: Db,
  appId: string,
  r: MetricRange & { previousLo: string; previousHi: string },
): Promise<Map<string, { previous: number; churned: number }>> {
  const unit = unitSql(r.unit);
  const cur = pairs(appId, r);
  const prev = pairs(appId, { lo: r.previousLo, hi: r.previousHi, timeZone: r.timeZone });
  const found = await rows<{ k: string; prev: string; churned: string }>(
    db,
    r.timeoutMs,
    `with cur as (select distinct user_id, date_trunc('${unit}', day::timestamp) as b from (${cur.sql}) c),
     prev as (select distinct user_id, date_trunc('${unit}', day::timestamp) as b from (${prev.sql}) p)
     select to_char(p.b + interval '1 ${unit}', 'YYYY-MM-DD HH24:MI') as k, count(*) as prev,
            count(*) filter (where c.user_id is null) as churned
     from prev p left join cur c on c.user_id = p.user_id and c.b = p.b + interval '1 ${unit}'
     group by 1`,
    [...cur.bindings, ...prev.bindings],
  );
  return new Map(found.map((row) => [row.k, { previous: Number(row.prev), churned: Number(row.churned) }]));
}

/** As queries/metrics.ts `retentionPerBucket`. */
export async function retentionPerBucket(
  db: Db,
  appId: string,
  r: MetricRange,
): Promise<Map<string, { cohort: number; retained: number }>> {
  const unit = unitSql(r.unit);
  const inRange = pairs(appId, r);
  // Active before the range: a folded row, or a delta not folded yet.
  const earlier = `(exists (select 1 from user_days u where u.app_id = ?::uuid and u.user_id = f.user_id and u.day < ?::date)
      or exists (select 1 from activity_deltas d where d.app_id = ?::uuid and d.user_id = f.user_id and ${DELTA_DAY} < ?::date))`;
  const next = pairs(appId, { lo: r.lo, hi: '9999-12-31', timeZone: r.timeZone });
  const found = await rows<{ k: string; n: string; retained: string }>(
    db,
    r.timeoutMs,
    `with firsts as (select user_id, min(day) as f from (${inRange.sql}) p group by user_id),
     cohort as (select f.user_id, date_trunc('${unit}', f.f::timestamp) as b from firsts f where not ${earlier}),
     later as (select distinct user_id, date_trunc('${unit}', day::timestamp) as b from (${next.sql}) n
               where user_id in (select user_id from cohort))
     select to_char(c.b, 'YYYY-MM-DD HH24:MI') as k, count(*) as n,
       count(*) filter (where exists (select 1 from later l where l.user_id = c.user_id and l.b = c.b + interval '1 ${unit}'))
         as retained
     from cohort c group by 1`,
    [...inRange.bindings, appId, r.lo, appId, r.timeZone, r.lo, ...next.bindings],
  );
  return new Map(found.map((row) => [row.k, { cohort: Number(row.n), retained: Number(row.retained) }]));
}

/** The app's rollup: its zone and state (none yet: an app whose events all came after migration 024). */
export async function rollupState(db: Db, appId: string): Promise<{ time_zone: string; state: string } | undefined> {
  return db('app_rollups').where({ app_id: appId }).first('time_zone', 'state');
}
