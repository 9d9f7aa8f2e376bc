// The seven metrics of GET /v1/analytics/metrics (DESIGN §6), bucketed by hour, day, week or
// month in the organization's time zone. Buckets cover the inclusive dates, clipped to them (a
// week bucket of a range starting on a Wednesday holds Wednesday to Sunday); "the previous bucket"
// and "the next bucket" are whole periods. Bot traffic is excluded everywhere.

import { timeZoneOf } from '../admin/organizations.js';
import type { ServiceContext } from '../context.js';
import { ValidationError } from '../errors.js';
import type { AppRow } from '../storage/tenancy.js';
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
} from '../time.js';
import * as raw from './queries/metrics.js';
import { convertedUsersPerBucket, type MetricRange } from './queries/metrics.js';
import * as hours from './queries/rollup-hours.js';
import * as rollup from './queries/rollup-metrics.js';

export type MetricName = 'dau' | 'mau' | 'retention' | 'revenue' | 'arpu' | 'conversion' | 'churn';

export interface MetricRequest {
  appId: string;
  /** Where the figures come from: the activity rollup when it is ready in `timeZone` (default), or raw events. */
  source?: 'rollup' | 'raw';
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

/** One metric of an app as GET /v1/analytics/metrics and get_metrics ask for it, with what was asked. */
export interface AppMetricSeries extends MetricSeries {
  appId: string;
  metric: MetricName;
  granularity: Unit;
}

/** A metric of the app, in its organization's time zone and with its conversion events. */
export async function appMetric(
  ctx: ServiceContext,
  app: AppRow,
  q: { metric: MetricName; startDate?: string; endDate?: string; granularity?: Unit },
): Promise<AppMetricSeries> {
  const granularity = q.granularity ?? 'day';
  const series = await computeMetric(ctx, {
    appId: app.id,
    metric: q.metric,
    startDate: q.startDate,
    endDate: q.endDate,
    granularity,
    timeZone: await timeZoneOf(ctx, app.organization_id),
    conversionEvents: app.conversion_events ?? [],
  });
  return { ...series, appId: app.id, metric: q.metric, granularity };
}

export async function computeMetric(ctx: ServiceContext, req: MetricRequest): Promise<MetricSeries> {
  const today = localDate(ctx.clock(), req.timeZone);
  const { start, end } = resolveDates(req.startDate, req.endDate, today);
  const unit = req.granularity;
  const list = buckets(start, end, unit);
  const values = await METRICS[req.metric](ctx, { ...req, source: await sourceOf(ctx, req) }, list, unit);
  return {
    startDate: start,
    endDate: end,
    points: list.map((b, i) => ({ date: label(b.key, unit), value: values[i] ?? 0 })),
  };
}

/**
 * The activity rollup answers when it is ready in the request's zone (raw events meanwhile: while
 * it is built after the upgrade, or rebuilt after the organization's time zone changed).
 */
async function sourceOf(ctx: ServiceContext, req: MetricRequest): Promise<'rollup' | 'raw'> {
  if (req.source === 'raw') return 'raw';
  return (await rollupAnswers(ctx, req.appId, req.timeZone)) ? 'rollup' : 'raw';
}

/** Whether the app's activity rollup can answer in `timeZone` (ready in that zone, or not started yet: no events before it). */
export async function rollupAnswers(
  ctx: Pick<ServiceContext, 'db'>,
  appId: string,
  timeZone: string,
): Promise<boolean> {
  return (await rollupsAnswer(ctx, appId, timeZone)).rollup;
}

/** Whether the app's per-event rollup can answer: counted from its earlier events (or none before it). */
export async function eventRollupAnswers(ctx: Pick<ServiceContext, 'db'>, appId: string): Promise<boolean> {
  return (await rollupsAnswer(ctx, appId, 'UTC')).eventRollup;
}

/**
 * All at once, from one read of the app's rollup state: the activity rollup in `timeZone`, the
 * per-event rollup, and the per-property rollup.
 */
export async function rollupsAnswer(
  ctx: Pick<ServiceContext, 'db'>,
  appId: string,
  timeZone: string,
): Promise<{ rollup: boolean; eventRollup: boolean; propertyRollup: boolean }> {
  const state = await rollup.rollupState(ctx.db, appId);
  return {
    rollup: state === undefined || (state.state === 'ready' && state.time_zone === timeZone),
    eventRollup: state === undefined || state.events_state === 'ready',
    propertyRollup: state === undefined || state.properties_state === 'ready',
  };
}

/** The queries for a request: the rollup's (for days, or by hour with raw events where hours need them), else raw events'. */
type Queries = Pick<
  typeof raw,
  'activeUsersPerBucket' | 'revenuePerBucket' | 'activityWindowEdges' | 'churnPerBucket' | 'retentionPerBucket'
>;
const queriesFor = (req: MetricRequest, unit: Unit): Queries =>
  req.source !== 'rollup' ? raw : unit === 'hour' ? hours : rollup;

type Compute = (ctx: ServiceContext, req: MetricRequest, list: Bucket[], unit: Unit) => Promise<number[]>;

const range = (list: Bucket[]) => [list[0]!.start, list[list.length - 1]!.end] as const;

/** The storage query range for a request (metric queries run under the analytics timeout). */
const rangeOf = (ctx: ServiceContext, req: MetricRequest, unit: Unit, lo: string, hi: string): MetricRange => ({
  timeZone: req.timeZone,
  unit,
  lo,
  hi,
  timeoutMs: ctx.config.analyticsQueryTimeoutMs,
});

const activeCounts = (ctx: ServiceContext, req: MetricRequest, unit: Unit, lo: string, hi: string) =>
  queriesFor(req, unit).activeUsersPerBucket(ctx.db, req.appId, rangeOf(ctx, req, unit, lo, hi));

/** Revenue per bucket. */
async function revenueSums(ctx: ServiceContext, req: MetricRequest, list: Bucket[], unit: Unit) {
  const [lo, hi] = range(list);
  const byKey = await queriesFor(req, unit).revenuePerBucket(ctx.db, req.appId, rangeOf(ctx, req, unit, lo, hi));
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
  const r = rangeOf(ctx, req, res, lo, hi);
  // By hour, the rollup answers for the whole days in the middle of the windows (raw events at their edges).
  const deltas = await queriesFor(req, res).activityWindowEdges(ctx.db, req.appId, r, MAU_WINDOW_DAYS);
  // MAU at end E = #spans (lo, hi] containing E = count(lo < E) - count(hi < E).
  // Deltas come sorted by time and bucket ends increase: one sweep.
  let i = 0;
  let total = 0;
  return list.map((b) => {
    const e = keyOf(b.end);
    while (i < deltas.length && deltas[i]!.at < e) total += deltas[i++]!.delta;
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
  const r = rangeOf(ctx, req, unit, lo, hi);
  // The rollup knows which users paid; configured conversion events are counted from raw events.
  // The two statements at once (on PostgreSQL, connections of the pool).
  const [converted, users] = await Promise.all([
    req.conversionEvents.length === 0 && queriesFor(req, unit) === rollup
      ? rollup.payingUsersPerBucket(ctx.db, req.appId, r)
      : convertedUsersPerBucket(ctx.db, req.appId, r, req.conversionEvents),
    activePerBucket(ctx, req, list, unit),
  ]);
  return list.map((b, i) => percent(converted.get(keyOf(b.key)) ?? 0, users[i]!));
};

/** Percent of the previous (whole) period's active users not active in this (clipped) bucket. */
const churn: Compute = async (ctx, req, list, unit) => {
  const first = list[0]!;
  const prevStart = addUnits(first.key, unit, -1);
  const last = list[list.length - 1]!;
  const byKey = await queriesFor(req, unit).churnPerBucket(ctx.db, req.appId, {
    ...rangeOf(ctx, req, unit, first.start, last.end),
    previousLo: prevStart,
    previousHi: last.key,
  });
  return list.map((b) => {
    const r = byKey.get(keyOf(b.key));
    return percent(r?.churned ?? 0, r?.previous ?? 0);
  });
};

/** Of the users whose first event falls in the bucket, the percent active in the next (whole) period. */
const retention: Compute = async (ctx, req, list, unit) => {
  const lo = list[0]!.start;
  const hi = list[list.length - 1]!.end;
  const byKey = await queriesFor(req, unit).retentionPerBucket(ctx.db, req.appId, rangeOf(ctx, req, unit, lo, hi));
  return list.map((b) => {
    const r = byKey.get(keyOf(b.key));
    return percent(r?.retained ?? 0, r?.cohort ?? 0);
  });
};

const METRICS: Record<MetricName, Compute> = { dau, mau, retention, revenue, arpu, conversion, churn };
