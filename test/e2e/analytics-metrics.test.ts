// GET /v1/analytics/metrics: every metric at two granularities on a small hand-built dataset whose
// values are worked out by hand below; an organization in New York for time zones; dates and apps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;

// Users a, b, c, d (UTC organization). Monday 2026-03-02 to Sunday 2026-03-15.
//   a: 03-02 10:00 session, 03-02 11:00 purchase revenue 10, 03-03 09:00 session, 03-09 10:00 session
//   b: 03-02 12:00 session, 03-04 15:00 purchase amount 5 (no revenue: amount counts)
//   c: 03-03 08:00 session, 03-10 09:00 purchase revenue 20, 03-10 09:30 purchase revenue "abc" (not a number)
//   d: 03-09 23:30 session
//   a bot visitor on 03-02 with revenue 1000, which no metric may see.
// Daily active: 03-02 {a,b}, 03-03 {a,c}, 03-04 {b}, 03-09 {a,d}, 03-10 {c}; other days none.
const EVENTS = [
  { user_id: 'a', event_name: 'session', timestamp: '2026-03-02T10:00:00Z' },
  { user_id: 'a', event_name: 'purchase', timestamp: '2026-03-02T11:00:00Z', properties: { revenue: 10 } },
  { user_id: 'a', event_name: 'session', timestamp: '2026-03-03T09:00:00Z' },
  { user_id: 'a', event_name: 'session', timestamp: '2026-03-09T10:00:00Z' },
  { user_id: 'b', event_name: 'session', timestamp: '2026-03-02T12:00:00Z' },
  { user_id: 'b', event_name: 'purchase', timestamp: '2026-03-04T15:00:00Z', properties: { amount: 5 } },
  { user_id: 'c', event_name: 'session', timestamp: '2026-03-03T08:00:00Z' },
  { user_id: 'c', event_name: 'purchase', timestamp: '2026-03-10T09:00:00Z', properties: { revenue: 20 } },
  { user_id: 'c', event_name: 'purchase', timestamp: '2026-03-10T09:30:00Z', properties: { revenue: 'abc' } },
  { user_id: 'd', event_name: 'session', timestamp: '2026-03-09T23:30:00Z' },
];

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  const { error } = await tenant.client.eventsTrackBatch({ body: { events: EVENTS } });
  expect(error).toBeUndefined();
  const botUser = uuidv7();
  await server.db.knex('users').insert({ id: botUser, app_id: tenant.app.id, external_id: 'visitor-bot' });
  await server.db.knex('events').insert({
    id: uuidv7(),
    app_id: tenant.app.id,
    user_id: botUser,
    event_name: 'purchase',
    properties: JSON.stringify({ revenue: 1000 }),
    source: 'website',
    is_bot: true,
    created_at: new Date('2026-03-02T13:00:00Z'),
  });
});
afterAll(() => server?.close());

async function series(metric: string, granularity: string, start_date: string, end_date: string, t: Tenant = tenant) {
  const { data, error, response } = await t.client.analyticsMetrics({
    query: { app_id: t.app.id, metric: metric as 'dau', granularity: granularity as 'day', start_date, end_date },
  });
  expect(error, JSON.stringify(error)).toBeUndefined();
  expect(response.status).toBe(200);
  expect(data!.metric).toBe(metric);
  expect(data!.metadata).toEqual({ app_id: t.app.id, start_date, end_date, granularity });
  return data!.data;
}

const values = (points: { value: number }[]) => points.map((p) => p.value);
const DAYS = ['2026-03-02', '2026-03-05'] as const;
const WEEKS = ['2026-03-02', '2026-03-15'] as const;

describe('metrics by day and by week (UTC)', () => {
  it('dau: distinct active users; a week is the average of its daily counts', async () => {
    const days = await series('dau', 'day', ...DAYS);
    expect(days).toEqual([
      { date: '2026-03-02', value: 2 },
      { date: '2026-03-03', value: 2 },
      { date: '2026-03-04', value: 1 },
      { date: '2026-03-05', value: 0 },
    ]);
    // week 1: (2 + 2 + 1) / 7 = 0.714; week 2: (2 + 1) / 7 = 0.429
    expect(await series('dau', 'week', ...WEEKS)).toEqual([
      { date: '2026-03-02', value: 0.71 },
      { date: '2026-03-09', value: 0.43 },
    ]);
  });

  it('mau: users active in the 30 days ending at the bucket end', async () => {
    expect(values(await series('mau', 'day', ...DAYS))).toEqual([2, 3, 3, 3]);
    // week 1 ends 03-09: a, b, c; week 2 ends 03-16: a, b, c, d
    expect(values(await series('mau', 'week', ...WEEKS))).toEqual([3, 4]);
  });

  it('retention: first seen in a bucket and active again in the next', async () => {
    // 03-02 cohort {a,b}: a back on 03-03 -> 50; 03-03 cohort {c}: not on 03-04 -> 0
    expect(values(await series('retention', 'day', ...DAYS))).toEqual([50, 0, 0, 0]);
    // week 1 cohort {a,b,c}: a and c back in week 2 -> 66.67; week 2 cohort {d}: not in week 3
    expect(values(await series('retention', 'week', ...WEEKS))).toEqual([66.67, 0]);
  });

  it('revenue: numeric revenue, else amount; bots and non-numbers ignored', async () => {
    expect(values(await series('revenue', 'day', ...DAYS))).toEqual([10, 0, 5, 0]);
    expect(values(await series('revenue', 'week', ...WEEKS))).toEqual([15, 20]);
    const hours = await series('revenue', 'hour', '2026-03-02', '2026-03-02');
    expect(hours).toHaveLength(24);
    expect(hours[11]).toEqual({ date: '2026-03-02T11:00', value: 10 });
    expect(hours.reduce((s, p) => s + p.value, 0)).toBe(10);
  });

  it('arpu: revenue divided by active users', async () => {
    // 10/2, 0/2, 5/1, no users
    expect(values(await series('arpu', 'day', ...DAYS))).toEqual([5, 0, 5, 0]);
    // 15 / {a,b,c}, 20 / {a,c,d}
    expect(values(await series('arpu', 'week', ...WEEKS))).toEqual([5, 6.67]);
  });

  it('conversion: share of active users with an event carrying revenue', async () => {
    expect(values(await series('conversion', 'day', ...DAYS))).toEqual([50, 0, 100, 0]);
    // week 1: a, b of {a,b,c}; week 2: c of {a,c,d}
    expect(values(await series('conversion', 'week', ...WEEKS))).toEqual([66.67, 33.33]);
  });

  it('conversion follows the app configured conversion events', async () => {
    const other = await server.createTenant();
    await other.client.eventsTrackBatch({ body: { events: EVENTS } });
    await server.db
      .knex('apps')
      .where({ id: other.app.id })
      .update({ conversion_events: JSON.stringify(['session']) });
    // sessions: 03-02 a,b of {a,b}; 03-03 a,c of {a,c}; 03-04 none of {b}
    expect(values(await series('conversion', 'day', ...DAYS, other))).toEqual([100, 100, 0, 0]);
  });

  it('churn: previous bucket active users missing from this one', async () => {
    // 03-01 had nobody; {a,b} -> {a,c}: b; {a,c} -> {b}: both; {b} -> {}: b
    expect(values(await series('churn', 'day', ...DAYS))).toEqual([0, 50, 100, 100]);
    // week 1 {a,b,c} -> week 2 {a,c,d}: b
    expect(values(await series('churn', 'week', ...WEEKS))).toEqual([0, 33.33]);
  });
});

describe('time zones, defaults and refusals', () => {
  it('buckets in the organization time zone (New York)', async () => {
    const ny = await server.createTenant();
    await server.db.knex('organizations').where({ id: ny.organization.id }).update({ timezone: 'America/New_York' });
    await ny.client.eventsTrackBatch({
      body: {
        events: [
          { user_id: 'x', event_name: 'open', timestamp: '2026-03-03T03:00:00Z' }, // 03-02 22:00 local
          { user_id: 'y', event_name: 'open', timestamp: '2026-03-03T04:30:00Z' }, // 03-02 23:30 local
          { user_id: 'x', event_name: 'open', timestamp: '2026-03-03T06:00:00Z' }, // 03-03 01:00 local
        ],
      },
    });
    expect(values(await series('dau', 'day', '2026-03-02', '2026-03-03', ny))).toEqual([2, 1]);
    const hours = await series('dau', 'hour', '2026-03-02', '2026-03-02', ny);
    expect(hours).toHaveLength(24);
    expect(hours[0]!.date).toBe('2026-03-02T00:00');
    expect(hours.filter((h) => h.value > 0)).toEqual([
      { date: '2026-03-02T22:00', value: 1 },
      { date: '2026-03-02T23:00', value: 1 },
    ]);
    // March: (2 + 1) / 31 days
    expect(await series('dau', 'month', '2026-03-01', '2026-03-31', ny)).toEqual([{ date: '2026-03-01', value: 0.1 }]);
  });

  it('defaults to the 30 days ending today', async () => {
    const { data } = await tenant.client.analyticsMetrics({ query: { app_id: tenant.app.id, metric: 'dau' } });
    const today = new Date().toISOString().slice(0, 10);
    expect(data!.metadata.end_date).toBe(today);
    expect(data!.data).toHaveLength(30);
    expect(data!.data[29]!.date).toBe(today);
    expect(data!.metadata.granularity).toBe('day');
  });

  it('refuses an end before the start, impossible dates and unknown metrics; hides other apps', async () => {
    const q = { app_id: tenant.app.id, metric: 'dau' as const };
    const reversed = await tenant.client.analyticsMetrics({
      query: { ...q, start_date: '2026-03-05', end_date: '2026-03-01' },
    });
    expect(reversed.response.status).toBe(400);
    expect(reversed.error).toMatchObject({ code: 'INVALID_REQUEST' });
    const impossible = await tenant.client.analyticsMetrics({ query: { ...q, start_date: '2026-02-30' } });
    expect(impossible.response.status).toBe(400);
    expect(impossible.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { errors: [{ path: '/query/start_date' }] },
    });
    const unknown = await tenant.client.analyticsMetrics({ query: { ...q, metric: 'ltv' as 'dau' } });
    expect(unknown.response.status).toBe(400);
    const stranger = await server.createTenant();
    const foreign = await stranger.client.analyticsMetrics({ query: q });
    expect(foreign.response.status).toBe(404);
  });
});
