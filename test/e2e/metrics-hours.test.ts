// Metrics by hour, and the MCP event trend by hour and by day, against reference SQL written here,
// property-based. Over a range whose local
// hours are evenly an hour apart, the queries bucket events by whole hours since the range's first
// instant instead of converting each event's time into the zone (queries/metrics.ts `bucketSql`,
// and churn's masks in rollup-hours.ts); across a daylight-saving change they convert in the zone.
// Events fall on, just before and just after hour starts, in zones with offsets of whole hours,
// :30 and :45, and with changes of an hour and of half an hour inside the range; dau, revenue,
// conversion and churn by hour must equal `date_trunc('hour', created_at at time zone ...)` over
// the same events. Runs on whichever database the suite uses (both in CI).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventAnalytics } from '../../server/src/analytics/event-analytics.js';
import { computeMetric, type MetricName } from '../../server/src/analytics/metrics.js';
import { evenHoursFrom } from '../../server/src/analytics/queries/metrics.js';
import type { IngestEvent } from '../../server/src/storage/event-rows.js';
import { addUnits } from '../../server/src/time.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const NOW = new Date('2026-11-20T12:00:00Z');
const RUNS = Number(process.env.HOURS_RUNS ?? 20);

/**
 * Each zone with a day whose two-day range holds a change of its offset, and one that does not:
 * New York (spring and autumn, an hour), Lord Howe (half an hour), Kathmandu (+05:45), Kolkata
 * (+05:30), Chatham (+13:45 / +12:45).
 */
const CASES = [
  { zone: 'UTC', days: ['2026-03-08', '2026-06-10'] },
  { zone: 'America/New_York', days: ['2026-03-07', '2026-10-31', '2026-06-10'] },
  { zone: 'Australia/Lord_Howe', days: ['2026-04-04', '2026-10-03', '2026-06-10'] },
  { zone: 'Asia/Kathmandu', days: ['2026-06-10'] },
  { zone: 'Asia/Kolkata', days: ['2026-06-10'] },
  { zone: 'Pacific/Chatham', days: ['2026-04-04', '2026-06-10'] },
];
const METRICS: MetricName[] = ['dau', 'revenue', 'conversion', 'churn'];

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({}, { clock: () => NOW, jobs: () => false });
});
afterAll(async () => {
  await server?.close();
});

/** An event's time: an offset of whole quarter hours from the range's start, nudged a millisecond either way or not at all. */
const event = fc.record({
  user: fc.integer({ min: 0, max: 4 }).map((i) => `u${i}`),
  // Any quarter hour of the range and the two hours before it, or a whole hour, or a local midnight.
  quarter: fc.oneof(
    fc.integer({ min: -8, max: 4 * 52 }),
    fc.integer({ min: -2, max: 52 }).map((h) => 4 * h),
    fc.constantFrom(0, 96, 192),
  ),
  nudge: fc.constantFrom(-1, 0, 1, 0, 1_000),
  name: fc.constantFrom('session', 'purchase'),
  revenue: fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 90 })),
});

/** The instant a local time of `zone` names, as PostgreSQL reads it. */
async function instantOf(local: string, zone: string): Promise<number> {
  const { rows } = await server.db.knex.raw(`select date_part('epoch', ?::timestamp at time zone ?) as s`, [
    local,
    zone,
  ]);
  return Number(rows[0].s) * 1000;
}

/** Per local hour of `zone`: distinct users, revenue and buyers, straight from the events. */
async function referenceHours(appId: string, zone: string) {
  const { rows } = await server.db.knex.raw(
    `select to_char(date_trunc('hour', created_at at time zone ?), 'YYYY-MM-DD"T"HH24:MI') as hour,
            count(distinct user_id) as users,
            coalesce(sum((properties->>'revenue')::numeric), 0) as revenue,
            count(distinct user_id) filter (where event_name = 'purchase') as buyers
     from events where app_id = ?::uuid and not is_bot group by 1`,
    [zone, appId],
  );
  return new Map(
    (rows as { hour: string; users: string; revenue: string; buyers: string }[]).map((r) => [
      r.hour,
      { users: Number(r.users), revenue: Number(r.revenue), buyers: Number(r.buyers) },
    ]),
  );
}

/** Churn by hour from the reference: the percent of the users of the local hour before with no event in this one. */
function referenceChurn(hours: Map<string, Set<string>>, label: string): number {
  const local = addUnits(`${label.replace('T', ' ')}:00`, 'hour', -1);
  const before = hours.get(`${local.slice(0, 10)}T${local.slice(11, 16)}`) ?? new Set<string>();
  if (before.size === 0) return 0;
  const now = hours.get(label) ?? new Set<string>();
  return (100 * [...before].filter((u) => !now.has(u)).length) / before.size;
}

async function usersByHour(appId: string, zone: string): Promise<Map<string, Set<string>>> {
  const { rows } = await server.db.knex.raw(
    `select distinct to_char(date_trunc('hour', created_at at time zone ?), 'YYYY-MM-DD"T"HH24:MI') as hour, user_id::text as u
     from events where app_id = ?::uuid and not is_bot`,
    [zone, appId],
  );
  const out = new Map<string, Set<string>>();
  for (const r of rows as { hour: string; u: string }[]) {
    if (!out.has(r.hour)) out.set(r.hour, new Set());
    out.get(r.hour)!.add(r.u);
  }
  return out;
}

/**
 * The MCP event trend of `session` by hour and by day (analytics/queries/event-analytics.ts: bucket
 * by bucket over ranges of instants, or one pass in the zone across a change of offset) equals
 * the events and distinct users per local hour and day from reference SQL.
 */
async function expectTrendEqualsReference(t: Tenant, zone: string, day: string, end: string): Promise<void> {
  const knex = server.db.knex;
  await knex('organizations').where({ id: t.organization.id }).update({ timezone: zone });
  for (const [unit, format] of [
    ['hour', 'YYYY-MM-DD"T"HH24:MI'],
    ['day', 'YYYY-MM-DD'],
  ] as const) {
    const { rows } = await knex.raw(
      `select to_char(date_trunc(?, created_at at time zone ?), ?) as k, count(*) as n, count(distinct user_id) as u
       from events where app_id = ?::uuid and not is_bot and event_name = 'session'
         and created_at >= (?::timestamp at time zone ?) and created_at < (?::timestamp at time zone ?) group by 1`,
      [unit, zone, format, t.app.id, `${day} 00:00:00`, zone, `${addUnits(`${end} 00:00:00`, 'day', 1)}`, zone],
    );
    const want = new Map((rows as { k: string; n: string; u: string }[]).map((r) => [r.k, r]));
    const report = await eventAnalytics(server.tally.context, t.app, 'session', {
      startDate: day,
      endDate: end,
      groupBy: unit,
    });
    for (const p of report.trends) {
      expect([p.count, p.unique_users], `session trend at ${p.date} in ${zone}`).toEqual([
        Number(want.get(p.date)?.n ?? 0),
        Number(want.get(p.date)?.u ?? 0),
      ]);
    }
    expect(report.total_events).toBe([...want.values()].reduce((n, r) => n + Number(r.n), 0));
  }
  const { rows } = await knex.raw(
    `select count(distinct user_id) as u from events where app_id = ?::uuid and not is_bot and event_name = 'session'
       and created_at >= (?::timestamp at time zone ?) and created_at < (?::timestamp at time zone ?)`,
    [t.app.id, `${day} 00:00:00`, zone, `${addUnits(`${end} 00:00:00`, 'day', 1)}`, zone],
  );
  const report = await eventAnalytics(server.tally.context, t.app, 'session', {
    startDate: day,
    endDate: end,
    groupBy: 'day',
  });
  expect(report.unique_users).toBe(Number(rows[0].u));
}

describe('metrics by hour', () => {
  it('counts from instants only over ranges without a change of offset', async () => {
    const db = server.tally.context.db;
    const range = (zone: string, lo: string, hi: string) => ({ lo, hi, timeZone: zone, timeoutMs: 10_000 });
    // Kathmandu's hours start at :15 UTC; the first instant is 2026-06-09 18:15 UTC.
    expect(await evenHoursFrom(db, range('Asia/Kathmandu', '2026-06-10 00:00:00', '2026-06-12 00:00:00'))).toBe(
      Date.parse('2026-06-09T18:15:00Z') / 1000,
    );
    // New York springs forward on 2026-03-08 and falls back on 2026-11-01; Lord Howe moves half an hour.
    expect(await evenHoursFrom(db, range('America/New_York', '2026-03-07 00:00:00', '2026-03-09 00:00:00'))).toBe(
      undefined,
    );
    expect(await evenHoursFrom(db, range('America/New_York', '2026-10-31 00:00:00', '2026-11-02 00:00:00'))).toBe(
      undefined,
    );
    expect(await evenHoursFrom(db, range('Australia/Lord_Howe', '2026-04-04 00:00:00', '2026-04-06 00:00:00'))).toBe(
      undefined,
    );
    // A range that does not start on a whole hour is bucketed in the zone.
    expect(await evenHoursFrom(db, range('UTC', '2026-06-10 00:30:00', '2026-06-11 00:00:00'))).toBe(undefined);
  });

  it('equals reference SQL in every zone, on both sides of hour starts and across changes of offset', async () => {
    const ctx = server.tally.context;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...CASES.flatMap((c) => c.days.map((day) => ({ zone: c.zone, day })))),
        fc.array(event, { minLength: 1, maxLength: 40 }),
        async ({ zone, day }, drawn) => {
          const t = await server.createTenant();
          const start = await instantOf(`${day} 00:00:00`, zone);
          const events: IngestEvent[] = drawn.map((e) => ({
            appId: t.app.id,
            userRef: e.user,
            eventName: e.name,
            properties: e.revenue === undefined ? {} : { revenue: e.revenue },
            createdAt: new Date(start + e.quarter * 900_000 + e.nudge),
            receivedAt: NOW,
            source: 'api',
            isBot: false,
          }));
          await ctx.ingestor.submit(events);
          const reference = await referenceHours(t.app.id, zone);
          const hours = await usersByHour(t.app.id, zone);
          const end = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
          await expectTrendEqualsReference(t, zone, day, end);
          for (const metric of METRICS) {
            const series = await computeMetric(ctx, {
              appId: t.app.id,
              metric,
              granularity: 'hour',
              timeZone: zone,
              conversionEvents: metric === 'conversion' ? ['purchase'] : [],
              startDate: day,
              endDate: end,
            });
            for (const p of series.points) {
              const want = reference.get(p.date);
              const users = want?.users ?? 0;
              const expected = {
                dau: users,
                revenue: want?.revenue ?? 0,
                conversion: users === 0 ? 0 : (100 * (want?.buyers ?? 0)) / users,
                churn: referenceChurn(hours, p.date),
              }[metric as 'dau' | 'revenue' | 'conversion' | 'churn'];
              expect(p.value, `${metric} at ${p.date} in ${zone}`).toBeCloseTo(expected, 1);
            }
          }
        },
      ),
      { numRuns: RUNS },
    );
  }, 300_000);
});
