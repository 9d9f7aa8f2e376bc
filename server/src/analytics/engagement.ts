// Engagement of an app over a period (GET /mcp/analytics/engagement), as DESIGN §6 defines it:
// dau is the mean of the daily dau metric over the period and mau the mau metric of the last day
// (both computed by the metrics code behind GET /v1/analytics/metrics), wau the distinct active
// users of the 7 days ending at the last day, stickiness their ratios, and day-N retention of the
// users first seen in the period. Segments are the app's audiences, each with its dau and day-7
// retention. Days are the organization's; bot traffic is excluded everywhere.

import { timeZoneOf } from '../admin/organizations.js';
import { allMemberIds, appAudiences } from '../audiences/members.js';
import type { AudienceRow } from '../audiences/queries/audiences.js';
import type { ServiceContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import type { AppRow } from '../storage/tenancy.js';
import { addDays, daysBetween, localDate } from '../time.js';
import { computeMetric, resolveDates, rollupAnswers } from './metrics.js';
import type { Window } from './queries/engagement.js';
import * as raw from './queries/engagement.js';
import * as rollup from './queries/rollup-engagement.js';

export const RETENTION_DAYS = [1, 7, 30] as const;
const WAU_DAYS = 7;

export interface EngagementQuery {
  startDate?: string;
  endDate?: string;
  /** An audience id or exact name: only that audience in `segments`. */
  segment?: string;
}

export interface EngagementReport {
  period: { start_date: string; end_date: string };
  metrics: {
    dau: number;
    wau: number;
    mau: number;
    stickiness: { daily_to_weekly: number; weekly_to_monthly: number; daily_to_monthly: number };
    retention: { day_1: number; day_7: number; day_30: number };
  };
  segments: { name: string; dau: number; retention_day_7: number }[];
}

const round2 = (n: number) => Math.round((n + Number.EPSILON) * 100) / 100;
const ratio = (num: number, den: number) => (den === 0 ? 0 : round2(num / den));
const percent = (num: number, den: number) => (den === 0 ? 0 : round2((100 * num) / den));

export async function engagement(ctx: ServiceContext, app: AppRow, q: EngagementQuery): Promise<EngagementReport> {
  const timeZone = await timeZoneOf(ctx, app.organization_id);
  const { start, end } = resolveDates(q.startDate, q.endDate, localDate(ctx.clock(), timeZone));
  const audiences = q.segment === undefined ? null : await chosenAudience(ctx, app.id, q.segment);
  const metric = (metric: 'dau' | 'mau', startDate: string) =>
    computeMetric(ctx, {
      appId: app.id,
      metric,
      startDate,
      endDate: end,
      granularity: 'day',
      timeZone,
      conversionEvents: app.conversion_events ?? [],
    });
  const daily = (await metric('dau', start)).points;
  const dau = round2(daily.reduce((sum, p) => sum + p.value, 0) / daily.length);
  const mau = (await metric('mau', end)).points[0]?.value ?? 0;
  const { activeUserDays, activeUsers, dayRetention } = (await rollupAnswers(ctx, app.id, timeZone)) ? rollup : raw;
  const base = { appId: app.id, timeZone, timeoutMs: ctx.config.analyticsQueryTimeoutMs };
  const period: Window = { ...base, from: `${start} 00:00:00`, to: `${addDays(end, 1)} 00:00:00` };
  const wau = await activeUsers(ctx.db, { ...period, from: `${addDays(end, 1 - WAU_DAYS)} 00:00:00` });
  const retention = await dayRetention(ctx.db, period, RETENTION_DAYS);
  const [day_1, day_7, day_30] = retention.retained.map((n) => percent(n, retention.cohort)) as [
    number,
    number,
    number,
  ];
  const days = daysBetween(start, end) + 1;
  const segments: EngagementReport['segments'] = [];
  for (const audience of audiences ?? (await appAudiences(ctx, app.id))) {
    const members = await allMemberIds(ctx, app.id, audience.id);
    const window = { ...period, members };
    const seen = await dayRetention(ctx.db, window, [7]);
    segments.push({
      name: audience.name,
      dau: round2((await activeUserDays(ctx.db, window)) / days),
      retention_day_7: percent(seen.retained[0]!, seen.cohort),
    });
  }
  return {
    period: { start_date: start, end_date: end },
    metrics: {
      dau,
      wau,
      mau,
      stickiness: {
        daily_to_weekly: ratio(dau, wau),
        weekly_to_monthly: ratio(wau, mau),
        daily_to_monthly: ratio(dau, mau),
      },
      retention: { day_1, day_7, day_30 },
    },
    segments,
  };
}

/** The audience `segment` names (its id, else its exact name); 404 when none of the app's does. */
async function chosenAudience(ctx: ServiceContext, appId: string, segment: string): Promise<AudienceRow[]> {
  const all = await appAudiences(ctx, appId);
  const byId = all.find((a) => a.id === segment.toLowerCase());
  const chosen = byId ? [byId] : all.filter((a) => a.name === segment).slice(0, 1);
  if (chosen.length === 0) throw new NotFoundError(`No audience "${segment}" in app ${appId}.`);
  return chosen;
}
