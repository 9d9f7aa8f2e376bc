// The seven metrics of GET /v1/analytics/metrics (DESIGN §6), bucketed by hour, day, week or
// month in the organization's time zone. Buckets cover the inclusive dates, clipped to them (a
// week bucket of a range starting on a Wednesday holds Wednesday to Sunday); "the previous bucket"
// and "the next bucket" are whole periods. Bot traffic is excluded everywhere.
import { ValidationError } from '../errors.js';
import type { ServiceContext } from '../services/context.js';
import { QueryTimeoutError } from './sandbox.js';
import {
  addDays,
  addUnits,
  EARLIEST_DATE,
  isCalendarDate,
  isSupportedDate,
  LATEST_DATE,
  label,
  localDate,
  truncate,
  type Unit,
} from './time.js';

export type MetricName = 'dau' | 'mau' | 'retention' | 'revenue' | 'arpu' | 'conversion' | 'churn';

export interface MetricRequest {
  appId: string;
  metric: MetricName;
  startDate?: string;
  endDate?: string;
  granularity: Unit;
  timeZone: string;
  /** The app's configured conversion events (empty: any event carrying revenue). */
  conversionEvents: string[];
}

export interface MetricSeries {
  startDate: string;
  endDate: string;
  points: { date: string; value: number }[];
}

interface Bucket {
  /** Natural start of the period (naive local timestamp). */
  key: string;
  /** Clipped start and end (exclusive). */
  start: string;
  end: string;
}

const MAX_BUCKETS = 10_000;
const MAU_WINDOW_DAYS = 30;

/** SQL for the numeric revenue of an event (`revenue`, else `amount`; JSON numbers only). */
export const REVENUE_SQL = `coalesce(
  case when jsonb_typeof(properties->'revenue') = 'number' then (properties->>'revenue')::numeric end,
  case when jsonb_typeof(properties->'amount') = 'number' then (properties->>'amount')::numeric end)`;

const round2 = (n: number) => Math.round((n + Number.EPSILON) * 100) / 100;
const percent = (num: number, den: number) => (den === 0 ? 0 : round2((100 * num) / den));
const keyOf = (local: string) => local.slice(0, 16);

/** Resolves the dates (defaults: the 30 days ending today) and checks them. */
export function resolveDates(startDate: string | undefined, endDate: string | undefined, today: string) {
  const errors: { path: string; message: string }[] = [];
  const check = (value: string | undefined, path: string) => {
    if (value === undefined) return;
    if (!isCalendarDate(value)) errors.push({ path, message: 'is not a calendar date' });
    else if (!isSupportedDate(value)) {
      errors.push({ path, message: `must be between ${EARLIEST_DATE} and ${LATEST_DATE}` });
    }
  };
  check(startDate, '/query/start_date');
  check(endDate, '/query/end_date');
  if (errors.length > 0) {
    throw new ValidationError(`Invalid request: ${errors[0]!.path} ${errors[0]!.message}.`, errors);
  }
  const end = endDate ?? (startDate !== undefined && startDate > today ? startDate : today);
  const start = startDate ?? addDays(end, -29);
  if (end < start) {
    throw new ValidationError('Invalid request: end_date is before start_date.', [
      { path: '/query/end_date', message: 'must not be before start_date' },
    ]);
  }
  return { start, end };
}

function buckets(start: string, end: string, unit: Unit): Bucket[] {
  const lo = `${start} 00:00:00`;
  const hi = `${addDays(end, 1)} 00:00:00`;
  const out: Bucket[] = [];
  for (let key = truncate(lo, unit); key < hi; key = addUnits(key, unit, 1)) {
    const next = addUnits(key, unit, 1);
    out.push({ key, start: key < lo ? lo : key, end: next > hi ? hi : next });
    if (out.length > MAX_BUCKETS) {
      throw new ValidationError(
        `Invalid request: that range has more than ${MAX_BUCKETS} ${unit} buckets; choose a shorter range or a larger granularity.`,
        [{ path: '/query/granularity', message: 'gives too many buckets for this range' }],
      );
    }
  }
  return out;
}

export async function computeMetric(ctx: ServiceContext, req: MetricRequest): Promise<MetricSeries> {
  const today = localDate(ctx.clock(), req.timeZone);
  const { start, end } = resolveDates(req.startDate, req.endDate, today);
  const unit = req.granularity;
  const list = buckets(start, end, unit);
  const values = await METRICS[req.metric](ctx, req, list, unit);
  return {
    startDate: start,
    endDate: end,
    points: list.map((b, i) => ({ date: label(b.key, unit), value: values[i] ?? 0 })),
  };
}

type Compute = (ctx: ServiceContext, req: MetricRequest, list: Bucket[], unit: Unit) => Promise<number[]>;

// Shared SQL fragments. Parameters: ? app id, ? time zone, then the range as naive local times.
const HUMAN = 'app_id = ?::uuid and not is_bot';
const inRange = (column = 'created_at') =>
  `${column} >= (?::timestamp at time zone ?) and ${column} < (?::timestamp at time zone ?)`;
const bucketKey = (unit: Unit) => `to_char(date_trunc('${unit}', created_at at time zone ?), 'YYYY-MM-DD HH24:MI')`;

/** Runs a metric query under the analytics statement timeout (a runaway range cannot hold a connection). */
async function rows<T>(ctx: ServiceContext, sql: string, bindings: unknown[]): Promise<T[]> {
  const timeoutMs = ctx.config.analyticsQueryTimeoutMs;
  try {
    return await ctx.db.transaction(async (trx) => {
      await trx.raw(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
      return (await trx.raw(sql, bindings as never[])).rows as T[];
    });
  } catch (err) {
    if ((err as { code?: string }).code === '57014') throw new QueryTimeoutError(timeoutMs);
    throw err;
  }
}

// Events carrying revenue; written like the partial index events_app_revenue_time (migration 004)
// so the planner can use it. `\\?` is jsonb's ? operator (knex reads a bare ? as a binding).
const CARRIES_REVENUE = `(properties \\? 'revenue' or properties \\? 'amount')`;
const NUMERIC_REVENUE = `(jsonb_typeof(properties->'revenue') = 'number' or jsonb_typeof(properties->'amount') = 'number')`;

const range = (list: Bucket[]) => [list[0]!.start, list[list.length - 1]!.end] as const;

/** Distinct users per unit over [lo, hi) among events matching `extra`, keyed by the unit's start. */
async function distinctUsers(
  ctx: ServiceContext,
  req: MetricRequest,
  unit: Unit,
  lo: string,
  hi: string,
  extra = '',
  extraBindings: unknown[] = [],
) {
  const found = await rows<{ k: string; n: string }>(
    ctx,
    `select to_char(b, 'YYYY-MM-DD HH24:MI') as k, count(*) as n from (
       select distinct date_trunc('${unit}', created_at at time zone ?) as b, user_id
       from events where ${HUMAN} and ${inRange()}${extra}
     ) s group by b`,
    [req.timeZone, req.appId, lo, req.timeZone, hi, req.timeZone, ...extraBindings],
  );
  return new Map(found.map((r) => [r.k, Number(r.n)]));
}

const activeCounts = (ctx: ServiceContext, req: MetricRequest, unit: Unit, lo: string, hi: string) =>
  distinctUsers(ctx, req, unit, lo, hi);

/** Revenue per bucket. */
async function revenueSums(ctx: ServiceContext, req: MetricRequest, list: Bucket[], unit: Unit) {
  const [lo, hi] = range(list);
  const found = await rows<{ k: string; revenue: string | null }>(
    ctx,
    `select ${bucketKey(unit)} as k, sum(${REVENUE_SQL}) as revenue
     from events where ${HUMAN} and ${inRange()} and ${CARRIES_REVENUE} group by 1`,
    [req.timeZone, req.appId, lo, req.timeZone, hi, req.timeZone],
  );
  const byKey = new Map(found.map((r) => [r.k, Number(r.revenue ?? 0)]));
  return list.map((b) => byKey.get(keyOf(b.key)) ?? 0);
}

async function activePerBucket(ctx: ServiceContext, req: MetricRequest, list: Bucket[], unit: Unit) {
  const [lo, hi] = range(list);
  const counts = await activeCounts(ctx, req, unit, lo, hi);
  return list.map((b) => counts.get(keyOf(b.key)) ?? 0);
}

const dau: Compute = async (ctx, req, list, unit) => {
  const lo = list[0]!.start;
  const hi = list[list.length - 1]!.end;
  if (unit === 'hour' || unit === 'day') {
    const counts = await activeCounts(ctx, req, unit, lo, hi);
    return list.map((b) => counts.get(keyOf(b.key)) ?? 0);
  }
  const daily = await activeCounts(ctx, req, 'day', lo, hi);
  return list.map((b) => {
    let sum = 0;
    let days = 0;
    for (let d = b.start; d < b.end; d = addUnits(d, 'day', 1)) {
      sum += daily.get(keyOf(d)) ?? 0;
      days++;
    }
    return round2(days === 0 ? 0 : sum / days);
  });
};

/**
 * Users active in the 30 days ending at each bucket's (clipped) end. Each (user, hour or day of
 * activity) covers the bucket ends in (a, a + 30 days], minus what the user's previous activity
 * already covered; summing those disjoint intervals' starts and ends gives every bucket's count.
 */
const mau: Compute = async (ctx, req, list, unit) => {
  const res: Unit = unit === 'hour' ? 'hour' : 'day';
  const hi = list[list.length - 1]!.end;
  const lo = addUnits(list[0]!.end, 'day', -MAU_WINDOW_DAYS);
  const deltas = await rows<{ t: string; n: string }>(
    ctx,
    `with acts as (
       select distinct user_id, date_trunc('${res}', created_at at time zone ?) as a
       from events where ${HUMAN} and ${inRange()}
     ), spans as (
       select greatest(a, lag(a) over (partition by user_id order by a) + interval '${MAU_WINDOW_DAYS} days') as lo,
              a + interval '${MAU_WINDOW_DAYS} days' as hi
       from acts
     )
     select to_char(t, 'YYYY-MM-DD HH24:MI') as t, sum(n) as n from (
       select lo as t, count(*) as n from spans group by lo
       union all select hi, -count(*) from spans group by hi
     ) d group by t order by t`,
    [req.timeZone, req.appId, lo, req.timeZone, hi, req.timeZone],
  );
  // MAU at end E = #spans (lo, hi] containing E = count(lo < E) - count(hi < E).
  // Deltas come sorted by time and bucket ends increase: one sweep.
  let i = 0;
  let total = 0;
  return list.map((b) => {
    const e = keyOf(b.end);
    while (i < deltas.length && deltas[i]!.t < e) total += Number(deltas[i++]!.n);
    return total;
  });
};

const revenue: Compute = async (ctx, req, list, unit) => (await revenueSums(ctx, req, list, unit)).map(round2);

const arpu: Compute = async (ctx, req, list, unit) => {
  const [money, users] = await Promise.all([revenueSums(ctx, req, list, unit), activePerBucket(ctx, req, list, unit)]);
  return money.map((m, i) => (users[i] === 0 ? 0 : round2(m / users[i]!)));
};

const conversion: Compute = async (ctx, req, list, unit) => {
  const [lo, hi] = range(list);
  const configured = req.conversionEvents.length > 0;
  const converted = await distinctUsers(
    ctx,
    req,
    unit,
    lo,
    hi,
    configured
      ? ` and event_name in (${req.conversionEvents.map(() => '?').join(', ')})`
      : ` and ${CARRIES_REVENUE} and ${NUMERIC_REVENUE}`,
    configured ? req.conversionEvents : [],
  );
  const users = await activePerBucket(ctx, req, list, unit);
  return list.map((b, i) => percent(converted.get(keyOf(b.key)) ?? 0, users[i]!));
};

/** Percent of the previous (whole) period's active users not active in this (clipped) bucket. */
const churn: Compute = async (ctx, req, list, unit) => {
  const first = list[0]!;
  const prevStart = addUnits(first.key, unit, -1);
  const last = list[list.length - 1]!;
  const found = await rows<{ k: string; prev: string; churned: string }>(
    ctx,
    `with cur as (
       select distinct user_id, date_trunc('${unit}', created_at at time zone ?) as b
       from events where ${HUMAN} and ${inRange()}
     ), prev as (
       select distinct user_id, date_trunc('${unit}', created_at at time zone ?) as b
       from events where ${HUMAN} and ${inRange()}
     )
     select to_char(p.b + interval '1 ${unit}', 'YYYY-MM-DD HH24:MI') as k, count(*) as prev,
            count(*) filter (where c.user_id is null) as churned
     from prev p left join cur c on c.user_id = p.user_id and c.b = p.b + interval '1 ${unit}'
     group by 1`,
    [
      req.timeZone,
      req.appId,
      first.start,
      req.timeZone,
      last.end,
      req.timeZone,
      req.timeZone,
      req.appId,
      prevStart,
      req.timeZone,
      last.key,
      req.timeZone,
    ],
  );
  const byKey = new Map(found.map((r) => [r.k, r]));
  return list.map((b) => {
    const r = byKey.get(keyOf(b.key));
    return percent(Number(r?.churned ?? 0), Number(r?.prev ?? 0));
  });
};

/** Of the users whose first event falls in the bucket, the percent active in the next (whole) period. */
const retention: Compute = async (ctx, req, list, unit) => {
  const lo = list[0]!.start;
  const hi = list[list.length - 1]!.end;
  const found = await rows<{ k: string; n: string; retained: string }>(
    ctx,
    `with firsts as (
       select user_id, min(created_at) as f from events where ${HUMAN} and ${inRange()} group by user_id
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
    [
      req.appId,
      lo,
      req.timeZone,
      hi,
      req.timeZone,
      req.timeZone,
      req.appId,
      lo,
      req.timeZone,
      req.appId,
      req.timeZone,
      req.timeZone,
    ],
  );
  const byKey = new Map(found.map((r) => [r.k, r]));
  return list.map((b) => {
    const r = byKey.get(keyOf(b.key));
    return percent(Number(r?.retained ?? 0), Number(r?.n ?? 0));
  });
};

const METRICS: Record<MetricName, Compute> = { dau, mau, retention, revenue, arpu, conversion, churn };
