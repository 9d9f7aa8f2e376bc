// The definitions of docs/mcp.md on a small hand-built dataset whose figures are worked out by hand
// below: engagement (dau, wau, mau, stickiness, day-N retention), one event's trend, property
// aggregates and peak times, and funnels (order, entry in the period, the time window's edge,
// repeated steps). UTC organization.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;
let mcp: TallyClient;

// 2026-03-01 is a Sunday.
//   u1: signup 03-01 10:00, view 03-01 11:00, buy 03-05 10:00
//   u2: signup 03-01 10:00, buy 03-01 10:30, view 03-01 11:00, view 03-02 09:00
//   u3: signup 03-02 10:00, view 03-10 10:00 (8 days later)
//   u4: view 03-01 12:00, view 03-08 12:00 (exactly 7 days later)
//   u5: signup 02-20 10:00 (before the period), signup 03-03 10:00, view 03-03 11:00, buy 03-04 10:00
//   u7: view 03-05 10:00, view 03-06 10:00
const ev = (user_id: string, event_name: string, timestamp: string, properties?: Record<string, unknown>) => ({
  user_id,
  event_name,
  timestamp: `2026-${timestamp}:00Z`,
  ...(properties ? { properties } : {}),
});
const EVENTS = [
  ev('u1', 'signup', '03-01T10:00'),
  ev('u1', 'view', '03-01T11:00', { page: 'home', ms: 120 }),
  ev('u1', 'buy', '03-05T10:00'),
  ev('u2', 'signup', '03-01T10:00'),
  ev('u2', 'buy', '03-01T10:30'),
  ev('u2', 'view', '03-01T11:00', { page: 'home' }),
  ev('u2', 'view', '03-02T09:00', { page: 'cart', ms: 30 }),
  ev('u3', 'signup', '03-02T10:00'),
  ev('u3', 'view', '03-10T10:00'),
  ev('u4', 'view', '03-01T12:00', { page: 'home', ms: 'slow', flag: true }),
  ev('u4', 'view', '03-08T12:00', { page: 'cart', flag: false, tags: ['a'] }),
  ev('u5', 'signup', '02-20T10:00'),
  ev('u5', 'signup', '03-03T10:00'),
  ev('u5', 'view', '03-03T11:00', { page: 'cart', flag: true }),
  ev('u5', 'buy', '03-04T10:00'),
  ev('u7', 'view', '03-05T10:00'),
  ev('u7', 'view', '03-06T10:00', { page: null }),
];
const PERIOD = { start_date: '2026-03-01', end_date: '2026-03-08' };

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  mcp = createTallyClient({ baseUrl: server.url, mcpApiKey: tenant.mcpKey });
  expect((await tenant.client.eventsTrackBatch({ body: { events: EVENTS } })).error).toBeUndefined();
});
afterAll(() => server?.close());

describe('engagement', () => {
  it('dau, wau, mau, stickiness and retention as docs/mcp.md defines them', async () => {
    const { data, error } = await mcp.mcpEngagement({ query: { app_id: tenant.app.id, ...PERIOD } });
    expect(error).toBeUndefined();
    expect(data).toEqual({
      app_id: tenant.app.id,
      period: PERIOD,
      metrics: {
        // daily active: 3, 2, 1, 1, 2, 1, 0, 1 -> 11 / 8
        dau: 1.38,
        // 03-02..03-08: u1, u2, u3, u4, u5, u7
        wau: 6,
        // 02-07..03-08: the same six
        mau: 6,
        stickiness: { daily_to_weekly: 0.23, weekly_to_monthly: 1, daily_to_monthly: 0.23 },
        // cohort: u1, u2, u4 (03-01), u3 (03-02), u7 (03-05); u5 was first seen 02-20.
        // day 1: u2 (03-02), u7 (03-06); day 7: u4 (03-08); u3 came back on day 8.
        retention: { day_1: 40, day_7: 20, day_30: 0 },
      },
      segments: [],
    });
  });
});

describe('event analytics', () => {
  it('trend, totals, property aggregates and peak times of view', async () => {
    const { data, error } = await mcp.mcpEventAnalytics({
      path: { eventName: 'view' },
      query: { app_id: tenant.app.id, ...PERIOD },
    });
    expect(error).toBeUndefined();
    expect(data).toEqual({
      event_name: 'view',
      app_id: tenant.app.id,
      period: PERIOD,
      total_events: 8,
      unique_users: 5,
      trends: [
        { date: '2026-03-01', count: 3, unique_users: 3 },
        { date: '2026-03-02', count: 1, unique_users: 1 },
        { date: '2026-03-03', count: 1, unique_users: 1 },
        { date: '2026-03-04', count: 0, unique_users: 0 },
        { date: '2026-03-05', count: 1, unique_users: 1 },
        { date: '2026-03-06', count: 1, unique_users: 1 },
        { date: '2026-03-07', count: 0, unique_users: 0 },
        { date: '2026-03-08', count: 1, unique_users: 1 },
      ],
      properties: {
        page: {
          type: 'text',
          count: 6,
          top_values: [
            { value: 'cart', count: 3 },
            { value: 'home', count: 3 },
          ],
          top_values_from: 6,
        },
        flag: {
          type: 'boolean',
          count: 3,
          top_values: [
            { value: 'true', count: 2 },
            { value: 'false', count: 1 },
          ],
          top_values_from: 3,
        },
        ms: {
          type: 'mixed',
          count: 3,
          top_values: [{ value: 'slow', count: 1 }],
          top_values_from: 3,
          min: 30,
          max: 120,
          avg: 75,
          sum: 150,
        },
        tags: { type: 'array', count: 1 },
      },
      // hours: 11 (three), 10 and 12 (two each), 9 (one); Sunday has four
      peak_times: { hour_of_day: 11, day_of_week: 'Sunday', timezone: 'UTC' },
    });
  });
});

describe('funnels', () => {
  const funnel = async (events: string[], time_window?: number, start_date = '2026-03-01', end_date = '2026-03-31') => {
    const { data, error } = await mcp.mcpFunnels({
      query: { app_id: tenant.app.id, events, start_date, end_date, time_window },
    });
    expect(error, JSON.stringify(error)).toBeUndefined();
    return data!;
  };

  it('counts a step only after the previous one, within the window of the first step in the period', async () => {
    // signup: u1, u2, u3, u5 (entering 03-03); view: u1, u2, u5 (u3's is 8 days late);
    // buy: u1, u5 (u2 bought before viewing).
    const data = await funnel(['signup', 'view', 'buy']);
    expect(data).toEqual({
      app_id: tenant.app.id,
      funnel: { events: ['signup', 'view', 'buy'], time_window: 7 },
      steps: [
        { event: 'signup', users: 4, conversion_rate: 100 },
        { event: 'view', users: 3, conversion_rate: 75, dropoff_rate: 25 },
        { event: 'buy', users: 2, conversion_rate: 50, dropoff_rate: 33.33 },
      ],
      overall_conversion: 50,
      analysis: { biggest_dropoff: 'buy', dropoff_percentage: 33.33, recommendation: expect.any(String) },
    });
    expect(data.analysis.recommendation).toContain(
      '1 user of the 3 who did view (33.33%) did not do buy within 7 days',
    );
  });

  it('a repeated step needs another event; the window includes its last instant', async () => {
    // second view: u2 (next day), u4 (exactly 7 days later), u7 (next day)
    expect((await funnel(['view', 'view'])).steps.map((s) => s.users)).toEqual([6, 3]);
    expect((await funnel(['view', 'view'], 6)).steps.map((s) => s.users)).toEqual([6, 2]);
  });

  it('no drop-off and no entrants are said plainly', async () => {
    const none = await funnel(['never', 'view']);
    expect(none.steps).toEqual([
      { event: 'never', users: 0, conversion_rate: 0 },
      { event: 'view', users: 0, conversion_rate: 0, dropoff_rate: 0 },
    ]);
    expect(none.analysis).toEqual({
      biggest_dropoff: null,
      dropoff_percentage: 0,
      recommendation: expect.stringContaining('No user did never between 2026-03-01 and 2026-03-31'),
    });
    // 03-03 only: u5 signs up and views
    const all = await funnel(['signup', 'view'], 7, '2026-03-03', '2026-03-03');
    expect(all.steps.map((s) => s.users)).toEqual([1, 1]);
    expect(all.analysis).toEqual({
      biggest_dropoff: null,
      dropoff_percentage: 0,
      recommendation: 'The one user who did signup went on to view within 7 days: no step loses anyone.',
    });
    // u5's second signup is their first in the period: no later signup follows
    expect((await funnel(['signup', 'signup'], 30)).steps.map((s) => s.users)).toEqual([4, 0]);
  });
});
