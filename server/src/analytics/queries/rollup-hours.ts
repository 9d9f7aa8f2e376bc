// The metrics by hour when the app's activity rollup is ready in the request's zone: the same
// functions, arguments and answers as queries/metrics.ts. The rollup keeps local days, not hours,
// so hours still come from raw events, but only where they must: the rolling 30-day figure counts
// the users of the days every window shares from the per-app rows and reads the few others' own
// events; retention takes its cohort (users first active in the range) from each user's ordered
// active days and then looks at those users' own events; churn reads the range once, as bit masks
// of each user's hours. Each runs as one statement, so a fold running meanwhile is seen whole or
// not at all. dau, revenue, arpu and conversion by hour read raw events as queries/metrics.ts does.
import type { Db } from '../../storage/handle.js';
import { LONGEST_WINDOW_DAYS } from '../../storage/migrations/026-activity-days.js';
import { timedRows as rows } from '../../storage/timed.js';
import { addDays, addUnits, hoursBetween, truncate } from '../../time.js';
import * as raw from './metrics.js';
import { evenHoursFrom, type MetricRange, unitSql } from './metrics.js';
import { windowUsersSql } from './rollup-days.js';
import { firstActiveSets } from './rollup-pairs.js';

export { activeUsersPerBucket, revenuePerBucket } from './metrics.js';

const KEY = `'YYYY-MM-DD HH24:MI'`;
const HUMAN = 'app_id = ?::uuid and not is_bot';
const AT = '(?::timestamp at time zone ?)';

/**
 * As queries/metrics.ts `activityWindowEdges` by hour (`r.lo` is the first bucket end less the
 * window, `r.hi` the last bucket end). The whole local days [s, t) from the last window start to
 * the first end lie inside every window: their users (counted from the per-app rows as
 * `windowUsers` counts them) are active at every bucket end. Any other user is active at an end E
 * when their last hour in the left strip [r.lo, s) is at most 30 days before E, or their first
 * hour in the right strip [t, r.hi) is before E. Those users are few (none of the days in between,
 * some around the strips: from each user's ordered active days, or, for the users the unfolded
 * deltas touch, their days with the deltas), and their two hours are read from their own events.
 * Raw events answer when the range leaves no whole day in between.
 */
export async function activityWindowEdges(
  db: Db,
  appId: string,
  r: MetricRange,
  windowDays: number,
): Promise<{ at: string; delta: number }[]> {
  const w = Math.floor(windowDays);
  const lastStart = addUnits(r.hi, 'day', -w);
  const s = truncate(lastStart, 'day') === lastStart ? lastStart : addUnits(truncate(lastStart, 'day'), 'day', 1);
  const t = truncate(addUnits(addUnits(r.lo, 'day', w), 'hour', -1), 'day');
  if (r.unit !== 'hour' || w > LONGEST_WINDOW_DAYS || s >= t) return raw.activityWindowEdges(db, appId, r, windowDays);
  const win = windowUsersSql(appId, { timeZone: r.timeZone, from: s, to: t });
  // width_bucket(d, days) is how many of the sorted days are on or before d.
  const noneBetween = (a: string) => `width_bucket(?::date, ${a}.days) = width_bucket(?::date, ${a}.days)`;
  const between = [addDays(t.slice(0, 10), -1), addDays(s.slice(0, 10), -1)];
  // Some active day around the strips, with a day of slack each side for instants near midnight.
  const around = [addDays(r.hi.slice(0, 10), 1), addDays(r.lo.slice(0, 10), -2)];
  const edge = (fn: 'max' | 'min') =>
    `(select ${fn}(date_trunc('hour', e.created_at at time zone ?)) from events e
      where e.app_id = ?::uuid and e.user_id = c.user_id and not e.is_bot and e.created_at >= ${AT} and e.created_at < ${AT})`;
  const edgeBindings = (lo: string, hi: string) => [r.timeZone, appId, lo, r.timeZone, hi, r.timeZone];
  const span = `interval '${w} days'`;
  const found = await rows<{ t: string; n: string }>(
    db,
    r.timeoutMs,
    `with ${win.sql},
     touched as (select distinct user_id from k),
     candidates as (
       select a.user_id from user_active_days a
       where a.app_id = ?::uuid and ${noneBetween('a')} and width_bucket(?::date, a.days) > width_bucket(?::date, a.days)
         and not exists (select 1 from touched x where x.user_id = a.user_id)
       union all
       select x.user_id from touched x left join user_active_days a on a.app_id = ?::uuid and a.user_id = x.user_id
       where case when exists (select 1 from kr where kr.user_id = x.user_id)
                  then not exists (select 1 from sets y where y.user_id = x.user_id and y.sign > 0)
                  else a.days is null or ${noneBetween('a')} end),
     strips as materialized (select ${edge('max')} as max_l, ${edge('min')} as min_r from candidates c),
     outside as (
       select max_l, min_r,
              max_l is not null and (min_r is null or min_r > max_l + ${span}) as leaves,
              min_r is not null and (max_l is null or min_r > max_l + ${span}) as joins
       from strips where max_l is not null or min_r is not null),
     edges as (
       select ?::timestamp as t, (select users from window_users)::bigint as n
       union all select ?::timestamp, count(*) from outside where max_l is not null
       union all select max_l + ${span}, -1 from outside where leaves
       union all select min_r, 1 from outside where joins)
     select to_char(t, ${KEY}) as t, sum(n) as n from edges group by t having sum(n) <> 0 order by t`,
    [
      ...win.bindings,
      appId,
      ...between,
      ...around,
      appId,
      ...between,
      ...edgeBindings(r.lo, s),
      ...edgeBindings(t, r.hi),
      r.lo,
      r.lo,
    ],
  );
  return found.map((row) => ({ at: row.t, delta: Number(row.n) }));
}

type ChurnRange = MetricRange & { previousLo: string; previousHi: string };
type Churn = Map<string, { previous: number; churned: number }>;

/** Hours a churn range may span for the one-word masks (exact integers in a JavaScript number). */
const MASK_HOURS = 53;

/**
 * As queries/metrics.ts `churnPerBucket` by hour, reading the events of the previous and the
 * current buckets once. Over at most 53 hours, each user's hours are two bit masks (bit i: the
 * local hour `previousLo` + i, with an event of the previous range, or of the current one), and
 * only the distinct pairs (previous hours, previous hours followed by a current one) come back,
 * counted: no sort of users and hours. Longer ranges, or a clock that leaves the range's hours
 * (a daylight-saving change at its edge), take one pass sorted by user and hour instead.
 */
export async function churnPerBucket(db: Db, appId: string, r: ChurnRange): Promise<Churn> {
  // The scan covers [previousLo, hi): the previous range must start first and end first.
  if (r.unit !== 'hour' || r.previousLo > r.lo || r.previousHi > r.hi) return raw.churnPerBucket(db, appId, r);
  if (addUnits(r.previousLo, 'hour', MASK_HOURS) < r.hi) return churnSorted(db, appId, r);
  const first = await evenHoursFrom(db, { ...r, lo: r.previousLo });
  if (first !== undefined) return churnFromMasks(db, appId, r, first);
  const bit = `case when i between 0 and ${MASK_HOURS - 1} then 1::bigint << i else 0::bigint end`;
  // Hours since previousLo, in the zone.
  const hour = {
    sql: `floor(date_part('epoch', (created_at at time zone ?) - ?::timestamp) / 3600)::int`,
    bindings: [r.timeZone, r.previousLo],
  };
  // \`offset 0\` keeps the subquery whole, so each event's hour is computed once, not once per use
  // of \`i\` (half the statement's time at ten million events).
  const found = await rows<{ p: string | null; x: string | null; n: string; odd: boolean }>(
    db,
    r.timeoutMs,
    `with u as (
       select bit_or(${bit}) filter (where created_at >= ${AT}) as c, bit_or(${bit}) filter (where created_at < ${AT}) as p,
              bool_or(i not between 0 and ${MASK_HOURS - 1}) as odd
       from (select user_id, created_at, ${hour.sql} as i
             from events where ${HUMAN} and created_at >= ${AT} and created_at < ${AT}
             offset 0) e
       group by user_id)
     select p, p & (c >> 1) as x, count(*) as n, bool_or(odd) as odd from u group by 1, 2`,
    [r.lo, r.timeZone, r.previousHi, r.timeZone, ...hour.bindings, appId, r.previousLo, r.timeZone, r.hi, r.timeZone],
  );
  if (found.some((row) => row.odd)) return churnSorted(db, appId, r);
  const previous = new Array<number>(MASK_HOURS).fill(0);
  const continued = new Array<number>(MASK_HOURS).fill(0);
  for (const row of found) {
    const n = Number(row.n);
    let p = Number(row.p ?? 0);
    let x = Number(row.x ?? 0);
    for (let i = 0; p > 0; i++, p = Math.floor(p / 2), x = Math.floor(x / 2)) {
      if (p % 2 === 1) previous[i]! += n;
      if (x % 2 === 1) continued[i]! += n;
    }
  }
  const out: Churn = new Map();
  previous.forEach((prev, i) => {
    if (prev > 0)
      out.set(addUnits(r.previousLo, 'hour', i + 1).slice(0, 16), { previous: prev, churned: prev - continued[i]! });
  });
  return out;
}

/**
 * churnPerBucket over even hours (evenHoursFrom, `first` the instant of previousLo): each user's
 * hours since previousLo as one bit mask (bit i: an event in the hour previousLo + i, counted from
 * instants), and only the distinct masks come back, counted. Hour i is a previous hour when it
 * starts before previousHi, and continued when hour i + 1, at or after lo, holds an event. One
 * mask instead of one for each range: the per-event filters were a third of the statement.
 */
async function churnFromMasks(db: Db, appId: string, r: ChurnRange, first: number): Promise<Churn> {
  const found = await rows<{ m: string; n: string }>(
    db,
    r.timeoutMs,
    `select m::text as m, count(*) as n from (
       select bit_or(1::bigint << floor((date_part('epoch', created_at) - ?) / 3600)::int) as m
       from events where ${HUMAN} and created_at >= ${AT} and created_at < ${AT} group by user_id) u
     group by 1`,
    [first, appId, r.previousLo, r.timeZone, r.hi, r.timeZone],
  );
  const hoursTo = (local: string) => hoursBetween(r.previousLo, local);
  const previousHours = hoursTo(r.previousHi);
  const firstCurrent = hoursTo(r.lo);
  const previous = new Array<number>(MASK_HOURS).fill(0);
  const continued = new Array<number>(MASK_HOURS).fill(0);
  for (const row of found) {
    const n = Number(row.n);
    const m = BigInt(row.m);
    const has = (i: number) => ((m >> BigInt(i)) & 1n) === 1n;
    for (let i = 0; i < previousHours; i++) {
      if (!has(i)) continue;
      previous[i]! += n;
      if (i + 1 >= firstCurrent && has(i + 1)) continued[i]! += n;
    }
  }
  const out: Churn = new Map();
  previous.forEach((prev, i) => {
    if (prev > 0)
      out.set(addUnits(r.previousLo, 'hour', i + 1).slice(0, 16), { previous: prev, churned: prev - continued[i]! });
  });
  return out;
}

/** churnPerBucket in one pass: per user and hour, whether it holds an event of each range, and whether the next hour is the following one. */
async function churnSorted(db: Db, appId: string, r: ChurnRange): Promise<Churn> {
  const found = await rows<{ k: string; prev: string; churned: string }>(
    db,
    r.timeoutMs,
    `with acts as (
       select user_id, date_trunc('hour', created_at at time zone ?) as b,
              bool_or(created_at >= ${AT}) as cur, bool_or(created_at < ${AT}) as prev
       from events where ${HUMAN} and created_at >= ${AT} and created_at < ${AT}
       group by 1, 2),
     flags as (
       select b, prev, coalesce(lead(b) over w = b + interval '1 hour' and lead(cur) over w, false) as cont
       from acts window w as (partition by user_id order by b))
     select to_char(b + interval '1 hour', ${KEY}) as k, count(*) as prev, count(*) filter (where not cont) as churned
     from flags where prev group by b`,
    [r.timeZone, r.lo, r.timeZone, r.previousHi, r.timeZone, appId, r.previousLo, r.timeZone, r.hi, r.timeZone],
  );
  return new Map(found.map((row) => [row.k, { previous: Number(row.prev), churned: Number(row.churned) }]));
}

/**
 * As queries/metrics.ts `retentionPerBucket` by hour. The users whose first event ever falls in
 * the range are among those whose first active local day does (a day more on each side, so the
 * instants decide): taken from each user's ordered active days, then their own events give the
 * first event's hour and whether the next hour holds one.
 */
export async function retentionPerBucket(
  db: Db,
  appId: string,
  r: MetricRange,
): Promise<Map<string, { cohort: number; retained: number }>> {
  const unit = unitSql(r.unit);
  const days = { lo: addDays(r.lo.slice(0, 10), -1), hi: addDays(r.hi.slice(0, 10), 2) };
  const sets = firstActiveSets(appId, r.timeZone, days);
  const own = `from events e where e.app_id = ?::uuid and e.user_id = c.user_id and not e.is_bot`;
  const found = await rows<{ k: string; n: string; retained: string }>(
    db,
    r.timeoutMs,
    `with ${sets.sql},
     firsts as (select c.user_id, (select min(e.created_at) ${own}) as f from sets c),
     cohort as (
       select user_id, date_trunc('${unit}', f at time zone ?) as b from firsts
       where f >= ${AT} and f < ${AT})
     select to_char(c.b, ${KEY}) as k, count(*) as n,
            count(*) filter (where exists (select 1 ${own}
              and e.created_at >= ((c.b + interval '1 ${unit}') at time zone ?)
              and e.created_at < ((c.b + interval '2 ${unit}') at time zone ?))) as retained
     from cohort c group by 1`,
    [...sets.bindings, appId, r.timeZone, r.lo, r.timeZone, r.hi, r.timeZone, appId, r.timeZone, r.timeZone],
  );
  return new Map(found.map((row) => [row.k, { cohort: Number(row.n), retained: Number(row.retained) }]));
}
