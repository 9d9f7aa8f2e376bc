// Analytics of one event name over a period (GET /mcp/analytics/events/:eventName): totals, a trend
// per hour, day, week or month (buckets as in GET /v1/analytics/metrics: the organization's time
// zone, weeks from Monday, the first and last buckets clipped to the period), aggregates of its
// properties, and when it happens most. Bot traffic is excluded.

import { timeZoneOf } from '../admin/organizations.js';
import type { ServiceContext } from '../context.js';
import { ValidationError } from '../errors.js';
import type { AppRow } from '../storage/tenancy.js';
import { addDays, addUnits, label, localDate, truncate, type Unit } from '../time.js';
import { resolveDates, rollupsAnswer } from './metrics.js';
import {
  type EventWindow,
  eventTimeProfile,
  eventTimeProfileFromSlots,
  eventTotalsAndTrend,
  propertyKeyStats,
  propertyKeyStatsFromSlots,
  sampledTopValues,
} from './queries/event-analytics.js';

/** Property keys reported (the most frequent) and text values listed per key. */
export const MAX_PROPERTIES = 50;
export const TOP_VALUES = 10;
/** Top values are counted in at most this many of the period's most recent events (read from the rollup). */
export const TOP_VALUES_SAMPLE = 10_000;
const MAX_BUCKETS = 10_000;
const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

export type PropertyType = 'text' | 'number' | 'boolean' | 'object' | 'array' | 'mixed';
export interface PropertyStats {
  type: PropertyType;
  count: number;
  top_values?: { value: string; count: number }[];
  top_values_from?: number;
  min?: number;
  max?: number;
  avg?: number;
  sum?: number;
}

export interface EventReport {
  period: { start_date: string; end_date: string };
  total_events: number;
  unique_users: number;
  trends: { date: string; count: number; unique_users: number }[];
  properties: Record<string, PropertyStats>;
  peak_times: { hour_of_day: number | null; day_of_week: string | null; timezone: string };
}

const round2 = (n: number) => Math.round((n + Number.EPSILON) * 100) / 100;
/** A numeric aggregate as a JSON number (a sum of huge values can exceed a double). */
const finite = (text: string | null) => Math.max(-Number.MAX_VALUE, Math.min(Number.MAX_VALUE, Number(text)));
const JSON_TYPES: Record<string, PropertyType> = {
  string: 'text',
  number: 'number',
  boolean: 'boolean',
  object: 'object',
  array: 'array',
};

/** Natural starts of the `unit` periods that meet [start, end] (inclusive days). */
function bucketKeys(start: string, end: string, unit: Unit): string[] {
  const lo = `${start} 00:00:00`;
  const hi = `${addDays(end, 1)} 00:00:00`;
  const keys: string[] = [];
  for (let key = truncate(lo, unit); key < hi; key = addUnits(key, unit, 1)) {
    keys.push(key);
    if (keys.length > MAX_BUCKETS) {
      throw new ValidationError(
        `Invalid request: that range has more than ${MAX_BUCKETS} ${unit} buckets; choose a shorter range or a larger group_by.`,
        [{ path: '/query/group_by', message: 'gives too many buckets for this range' }],
      );
    }
  }
  return keys;
}

/** The key with the largest count (the smallest key on a tie), or null for an empty map. */
function busiest(counts: Map<number, number>): number | null {
  let best: number | null = null;
  for (const [k, n] of counts) {
    if (best === null || n > counts.get(best)! || (n === counts.get(best)! && k < best)) best = k;
  }
  return best;
}

export async function eventAnalytics(
  ctx: ServiceContext,
  app: AppRow,
  eventName: string,
  q: { startDate?: string; endDate?: string; groupBy: Unit },
): Promise<EventReport> {
  const timeZone = await timeZoneOf(ctx, app.organization_id);
  const { start, end } = resolveDates(q.startDate, q.endDate, localDate(ctx.clock(), timeZone));
  const keys = bucketKeys(start, end, q.groupBy);
  const w: EventWindow = {
    appId: app.id,
    eventName,
    timeZone,
    from: `${start} 00:00:00`,
    to: `${addDays(end, 1)} 00:00:00`,
    timeoutMs: ctx.config.analyticsQueryTimeoutMs,
  };
  // When it happens most and the property figures: from the per-event and per-property rollups
  // once they hold the app's events (local days are whole 15-minute slots from 1973 on), else
  // from raw events.
  const rollups = start >= '1973-01-01' ? await rollupsAnswer(ctx, app.id, timeZone) : undefined;
  // The passes at once (on PostgreSQL, connections of the pool).
  const [{ totals, trend }, profile, properties] = await Promise.all([
    eventTotalsAndTrend(ctx.db, w, q.groupBy),
    (rollups?.eventRollup ? eventTimeProfileFromSlots : eventTimeProfile)(ctx.db, w),
    rollups?.propertyRollup ? propertyAggregatesFromSlots(ctx, w) : propertyAggregates(ctx, w),
  ]);
  const hour = busiest(profile.hours);
  const weekday = busiest(profile.weekdays);
  return {
    period: { start_date: start, end_date: end },
    total_events: totals.events,
    unique_users: totals.users,
    trends: keys.map((key) => {
      const found = trend.get(key.slice(0, 16));
      return { date: label(key, q.groupBy), count: found?.events ?? 0, unique_users: found?.users ?? 0 };
    }),
    properties,
    peak_times: {
      hour_of_day: hour,
      day_of_week: weekday === null ? null : WEEKDAYS[weekday - 1]!,
      timezone: timeZone,
    },
  };
}

/** The figures of a key's numeric values, as JSON numbers (two decimals for the mean). */
function withNumbers(stats: PropertyStats, k: Record<'min' | 'max' | 'avg' | 'sum', string | null>): void {
  stats.min = finite(k.min);
  stats.max = finite(k.max);
  stats.avg = round2(finite(k.avg));
  stats.sum = finite(k.sum);
}

async function propertyAggregates(ctx: ServiceContext, w: EventWindow): Promise<Record<string, PropertyStats>> {
  const keys = await propertyKeyStats(ctx.db, w, MAX_PROPERTIES, TOP_VALUES);
  // A null-prototype object: property names such as `__proto__` are ordinary keys here.
  const out: Record<string, PropertyStats> = Object.create(null);
  for (const k of keys) {
    const stats: PropertyStats = {
      type: k.types.length === 1 ? (JSON_TYPES[k.types[0]!] ?? 'mixed') : 'mixed',
      count: k.count,
    };
    if (k.values !== null) {
      stats.top_values = k.values;
      stats.top_values_from = k.count;
    }
    if (k.numbers > 0) withNumbers(stats, k);
    out[k.key] = stats;
  }
  return out;
}

/**
 * The same figures from the per-property rollup: types, counts and numeric figures exact; top
 * values counted in the period's TOP_VALUES_SAMPLE most recent events (all of them in a smaller
 * period), with `top_values_from` saying in how many of them the key was counted.
 */
async function propertyAggregatesFromSlots(
  ctx: ServiceContext,
  w: EventWindow,
): Promise<Record<string, PropertyStats>> {
  const [keys, sampled] = await Promise.all([
    propertyKeyStatsFromSlots(ctx.db, w, MAX_PROPERTIES),
    sampledTopValues(ctx.db, w, TOP_VALUES_SAMPLE, TOP_VALUES),
  ]);
  const out: Record<string, PropertyStats> = Object.create(null);
  for (const k of keys) {
    const seen = Object.entries(k.types).filter(([, n]) => n > 0);
    const stats: PropertyStats = {
      type: seen.length === 1 ? JSON_TYPES[seen[0]![0]]! : 'mixed',
      count: seen.reduce((total, [, n]) => total + n, 0),
    };
    if (k.types.string + k.types.boolean > 0) {
      const found = sampled.get(k.key);
      stats.top_values = found?.values ?? [];
      stats.top_values_from = found?.counted ?? 0;
    }
    if (k.types.number > 0) withNumbers(stats, k);
    out[k.key] = stats;
  }
  return out;
}
