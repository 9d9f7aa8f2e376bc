// Queries behind the metrics of GET /v1/analytics/metrics (analytics/metrics.ts decides buckets
// and arithmetic). Each counts per bucket of a calendar unit in the organization's time zone, over
// a range of naive local times [lo, hi), keyed 'YYYY-MM-DD HH24:MI' by the bucket's natural start;
// bot traffic is left out everywhere; each runs under a statement timeout (storage/timed.ts).
import type { Db } from '../../storage/handle.js';
import { timedRows as rows } from '../../storage/timed.js';
import { hoursBetween, truncate } from '../../time.js';

export type BucketUnit = 'hour' | 'day' | 'week' | 'month';

/** A bucket's key as the queries return it: its natural local start. */
const KEY = `'YYYY-MM-DD HH24:MI'`;

export interface MetricRange {
  timeZone: string;
  unit: BucketUnit;
  /** Naive local times 'YYYY-MM-DD HH:MM:SS'; `hi` is excluded. */
  lo: string;
  hi: string;
  timeoutMs: number;
}

const UNITS: readonly BucketUnit[] = ['hour', 'day', 'week', 'month'];

/** The unit is written into the SQL text: only the four known names get there. */
export function unitSql(unit: BucketUnit): BucketUnit {
  if (!UNITS.includes(unit)) throw new TypeError(`unknown bucket unit ${JSON.stringify(unit)}`);
  return unit;
}

// Fragments. Parameters: ? app id, then the range as naive local times each with ? time zone.
const HUMAN = 'app_id = ?::uuid and not is_bot';
const IN_RANGE = 'created_at >= (?::timestamp at time zone ?) and created_at < (?::timestamp at time zone ?)';
const humanInRange = (appId: string, r: { lo: string; hi: string; timeZone: string }) => [
  appId,
  r.lo,
  r.timeZone,
  r.hi,
  r.timeZone,
];

/** The numeric revenue of an event (`revenue`, else `amount`; JSON numbers only). */
const REVENUE = `coalesce(
  case when jsonb_typeof(properties->'revenue') = 'number' then (properties->>'revenue')::numeric end,
  case when jsonb_typeof(properties->'amount') = 'number' then (properties->>'amount')::numeric end)`;
// Events carrying revenue; written like the partial index of money events (migration 032, before it 004)
// so the planner can use it. `\\?` is jsonb's ? operator (knex reads a bare ? as a binding).
const CARRIES_REVENUE = `(properties \\? 'revenue' or properties \\? 'amount')`;
const NUMERIC_REVENUE = `(jsonb_typeof(properties->'revenue') = 'number' or jsonb_typeof(properties->'amount') = 'number')`;

/** How an event's bucket is written (`of`, selected as `b`) and how `b` becomes the bucket's key (`key`). */
interface BucketSql {
  of: string;
  ofBindings: unknown[];
  key: string;
  keyBindings: unknown[];
}

/** Hour ranges longer than this (about 13 months) are bucketed in the zone, event by event. */
const EVEN_HOURS_AT_MOST = 9_600;

/**
 * The first instant of [lo, hi) as Unix seconds when its local hours are evenly an hour apart as
 * instants (the zone's offset does not change over the range, as it does at a daylight-saving
 * change), else undefined. PostgreSQL decides, with the time-zone rules every other query uses.
 */
export async function evenHoursFrom(
  db: Db,
  r: { lo: string; hi: string; timeZone: string; timeoutMs: number },
): Promise<number | undefined> {
  const hours = hoursBetween(r.lo, r.hi);
  if (truncate(r.lo, 'hour') !== r.lo || !(hours >= 0 && hours <= EVEN_HOURS_AT_MOST)) return undefined;
  const [found] = await rows<{ first: number; even: boolean }>(
    db,
    r.timeoutMs,
    `select date_part('epoch', ?::timestamp at time zone ?) as first,
            bool_and(((?::timestamp + g * interval '1 hour') at time zone ?)
                     = (?::timestamp at time zone ?) + g * interval '1 hour') as even
     from generate_series(0, ?::int) g`,
    [r.lo, r.timeZone, r.lo, r.timeZone, r.lo, r.timeZone, hours],
  );
  return found?.even ? Number(found.first) : undefined;
}

/**
 * An event's bucket. Hours over a range of even hours (`first`: evenHoursFrom's answer, undefined
 * for the other units) are counted from instants:
 * whole hours since the range's first instant, with no time-zone conversion per event (the
 * conversion was most of a 48-hour query's time at ten million events). Otherwise the local
 * calendar unit of each event, in the zone.
 */
function bucketSql(r: MetricRange, first: number | undefined): BucketSql {
  const unit = unitSql(r.unit);
  if (first === undefined)
    return {
      of: `date_trunc('${unit}', created_at at time zone ?)`,
      ofBindings: [r.timeZone],
      key: `to_char(b, ${KEY})`,
      keyBindings: [],
    };
  return {
    of: `floor((date_part('epoch', created_at) - ?) / 3600)::int`,
    ofBindings: [first],
    key: `to_char(?::timestamp + b * interval '1 hour', ${KEY})`,
    keyBindings: [r.lo],
  };
}

/** Distinct users per bucket among the app's events matching `extra`. */
async function distinctUsersPerBucket(
  db: Db,
  appId: string,
  r: MetricRange,
  extra = '',
  extraBindings: unknown[] = [],
): Promise<Map<string, number>> {
  const first = r.unit === 'hour' ? await evenHoursFrom(db, r) : undefined;
  if (first !== undefined) return distinctUsersPerHour(db, appId, r, first, extra, extraBindings);
  const b = bucketSql(r, first);
  const found = await rows<{ k: string; n: string }>(
    db,
    r.timeoutMs,
    `select ${b.key} as k, count(*) as n from (
       select distinct ${b.of} as b, user_id
       from events where ${HUMAN} and ${IN_RANGE}${extra}
     ) s group by b`,
    [...b.keyBindings, ...b.ofBindings, ...humanInRange(appId, r), ...extraBindings],
  );
  return new Map(found.map((row) => [row.k, Number(row.n)]));
}

/**
 * distinctUsersPerBucket by hour over a range of even hours (evenHoursFrom, `first` its first
 * instant): hour by hour, each over its own range of instants, so that each hour's users are
 * sorted in memory where one hash of every (hour, user) pair of two busy days spilled to disk (at
 * ten million events, 48 hours: about 410 -> 300 ms).
 */
async function distinctUsersPerHour(
  db: Db,
  appId: string,
  r: MetricRange,
  first: number,
  extra: string,
  extraBindings: unknown[],
): Promise<Map<string, number>> {
  const hours = hoursBetween(r.lo, r.hi);
  const found = await rows<{ k: string; n: string }>(
    db,
    r.timeoutMs,
    `select to_char(?::timestamp + g * interval '1 hour', ${KEY}) as k, s.n
     from generate_series(0, ?::int - 1) g cross join lateral (
       select count(distinct user_id) as n from events
       where ${HUMAN} and created_at >= to_timestamp(?::float8 + g * 3600) and created_at < to_timestamp(?::float8 + (g + 1) * 3600)${extra}
     ) s where s.n > 0`,
    [r.lo, hours, appId, first, first, ...extraBindings],
  );
  return new Map(found.map((row) => [row.k, Number(row.n)]));
}

/** Users with at least one event, per bucket. */
export const activeUsersPerBucket = (db: Db, appId: string, r: MetricRange) => distinctUsersPerBucket(db, appId, r);

/**
 * Users who converted, per bucket: sent one of `conversionEvents`, or, when none are configured,
 * an event carrying a numeric revenue.
 */
export function convertedUsersPerBucket(db: Db, appId: string, r: MetricRange, conversionEvents: readonly string[]) {
  return conversionEvents.length > 0
    ? distinctUsersPerBucket(db, appId, r, ` and event_name in (${conversionEvents.map(() => '?').join(', ')})`, [
        ...conversionEvents,
      ])
    : distinctUsersPerBucket(db, appId, r, ` and ${CARRIES_REVENUE} and ${NUMERIC_REVENUE}`);
}

/** Revenue per bucket. */
export async function revenuePerBucket(db: Db, appId: string, r: MetricRange): Promise<Map<string, number>> {
  const b = bucketSql(r, r.unit === 'hour' ? await evenHoursFrom(db, r) : undefined);
  const found = await rows<{ k: string; revenue: string | null }>(
    db,
    r.timeoutMs,
    `select ${b.key} as k, sum(v) as revenue from (
       select ${b.of} as b, ${REVENUE} as v
       from events where ${HUMAN} and ${IN_RANGE} and ${CARRIES_REVENUE}
     ) s group by b`,
    [...b.keyBindings, ...b.ofBindings, ...humanInRange(appId, r)],
  );
  return new Map(found.map((row) => [row.k, Number(row.revenue ?? 0)]));
}

/**
 * The rest of the window-edges query over a CTE `acts(user_id, a)` (each user's units of
 * activity): a CTE `spans`, then the edges (shared with the rollup's queries).
 */
export const windowEdgesSql = (days: number) => `spans as (
       select greatest(a, lag(a) over (partition by user_id order by a) + interval '${Math.floor(days)} days') as lo,
              a + interval '${Math.floor(days)} days' as hi
       from acts
     )
     select to_char(t, 'YYYY-MM-DD HH24:MI') as t, sum(n) as n from (
       select lo as t, count(*) as n from spans group by lo
       union all select hi, -count(*) from spans group by hi
     ) d group by t order by t`;

/** The churn query's final select over CTEs `cur` and `prev` of (user_id, bucket b) (shared with the rollup's queries). */
export const churnSql = (
  unit: BucketUnit,
) => `select to_char(p.b + interval '1 ${unitSql(unit)}', 'YYYY-MM-DD HH24:MI') as k,
            count(*) as prev, count(*) filter (where c.user_id is null) as churned
     from prev p left join cur c on c.user_id = p.user_id and c.b = p.b + interval '1 ${unitSql(unit)}'
     group by 1`;

/**
 * The edges of every user's activity windows, for users active within a rolling window: each
 * (user, unit of activity) `a` covers the ends in (a, a + windowDays], minus what the user's
 * previous activity already covered. Returns, sorted by time, how the number of covering windows
 * changes at each edge (+n where windows start, -n where they end).
 */
export async function activityWindowEdges(
  db: Db,
  appId: string,
  r: MetricRange,
  windowDays: number,
): Promise<{ at: string; delta: number }[]> {
  const days = Math.floor(windowDays);
  const unit = unitSql(r.unit);
  const found = await rows<{ t: string; n: string }>(
    db,
    r.timeoutMs,
    `with acts as (
       select distinct user_id, date_trunc('${unit}', created_at at time zone ?) as a
       from events where ${HUMAN} and ${IN_RANGE}
     ), ${windowEdgesSql(days)}`,
    [r.timeZone, ...humanInRange(appId, r)],
  );
  return found.map((row) => ({ at: row.t, delta: Number(row.n) }));
}

/**
 * Per bucket, the users active in the previous whole bucket (`previous`) and how many of them are
 * not active in this one (`churned`). `previousLo` is the start of the bucket before the first,
 * and `previousHi` the start of the last bucket (the previous buckets' range).
 */
export async function churnPerBucket(
  db: Db,
  appId: string,
  r: MetricRange & { previousLo: string; previousHi: string },
): Promise<Map<string, { previous: number; churned: number }>> {
  const unit = unitSql(r.unit);
  const found = await rows<{ k: string; prev: string; churned: string }>(
    db,
    r.timeoutMs,
    `with cur as (
       select distinct user_id, date_trunc('${unit}', created_at at time zone ?) as b
       from events where ${HUMAN} and ${IN_RANGE}
     ), prev as (
       select distinct user_id, date_trunc('${unit}', created_at at time zone ?) as b
       from events where ${HUMAN} and ${IN_RANGE}
     )
     ${churnSql(unit)}`,
    [
      r.timeZone,
      ...humanInRange(appId, r),
      r.timeZone,
      ...humanInRange(appId, { lo: r.previousLo, hi: r.previousHi, timeZone: r.timeZone }),
    ],
  );
  return new Map(found.map((row) => [row.k, { previous: Number(row.prev), churned: Number(row.churned) }]));
}

/**
 * Per bucket, the users whose first event ever falls in it (`cohort`) and how many of them are
 * active in the next whole bucket (`retained`).
 */
export async function retentionPerBucket(
  db: Db,
  appId: string,
  r: MetricRange,
): Promise<Map<string, { cohort: number; retained: number }>> {
  const unit = unitSql(r.unit);
  const found = await rows<{ k: string; n: string; retained: string }>(
    db,
    r.timeoutMs,
    `with firsts as (
       select user_id, min(created_at) as f from events where ${HUMAN} and ${IN_RANGE} group by user_id
     ), cohort as (
       select f.user_id, date_trunc('${unit}', f.f at time zone ?) as b from firsts f
       where not exists (
         select 1 from events e where e.app_id = ?::uuid and e.user_id = f.user_id and not e.is_bot
           and e.created_at < (?::timestamp at time zone ?))
     )
     select to_char(c.b, 'YYYY-MM-DD HH24:MI') as k, count(*) as n,
       count(*) filter (where exists (
         select 1 from events e where e.app_id = ?::uuid and e.user_id = c.user_id and not e.is_bot
           and e.created_at >= ((c.b + interval '1 ${unit}') at time zone ?)
           and e.created_at < ((c.b + interval '2 ${unit}') at time zone ?))) as retained
     from cohort c group by 1`,
    [...humanInRange(appId, r), r.timeZone, appId, r.lo, r.timeZone, appId, r.timeZone, r.timeZone],
  );
  return new Map(found.map((row) => [row.k, { cohort: Number(row.n), retained: Number(row.retained) }]));
}
