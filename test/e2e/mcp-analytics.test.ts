// MCP analytics GETs agree with the product's own figures (DESIGN §6), on seed-demo data with a
// fixed clock in an organization in New York: engagement dau is the mean of GET
// /v1/analytics/metrics dau by day and mau its mau on the last day; wau, stickiness, retention
// day 1/7/30, audience segments, event trends, totals, property aggregates, peak times and funnel
// steps equal SQL written by hand and run through POST /v1/analytics/query (the SQL sandbox).
// Every body is validated strictly against the contract.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { errorPaths } from '../helpers/errors.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

const TZ = 'America/New_York';
const NOW = new Date('2026-04-01T03:30:00Z'); // 23:30 on 2026-03-31 in New York
const SEED = { seed: 7, users: 80, days: 75, end_date: '2026-03-31' };
const PERIOD = { start_date: '2026-02-10', end_date: '2026-03-10' };

let server: TestServer;
let tenant: Tenant;
let mcp: TallyClient;

beforeAll(async () => {
  // The reference SQL runs in the sandbox; on a busy machine the embedded default (2 s) is too tight for it.
  server = await startTestServer({ EMBEDDED_QUERY_TIMEOUT_MS: '30000' }, { clock: () => NOW });
  tenant = await server.createTenant();
  await server.db.knex('organizations').where({ id: tenant.organization.id }).update({ timezone: TZ });
  mcp = createTallyClient({ baseUrl: server.url, mcpApiKey: tenant.mcpKey });
  const admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
  const seeded = await admin.adminDemoSeed({ path: { app_id: tenant.app.id }, body: SEED });
  expect(seeded.error).toBeUndefined();
  expect(seeded.data!.events).toBeGreaterThan(3000);
}, 180_000);
afterAll(() => server?.close());

/** Rows of hand-written SQL through the SQL sandbox (POST /v1/analytics/query). */
async function sql(query: string): Promise<Record<string, unknown>[]> {
  const { data, error } = await tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query } });
  expect(error, `${JSON.stringify(error)}\n${query}`).toBeUndefined();
  expect(data!.truncated).toBe(false);
  return data!.data;
}

/** A local day boundary in the organization's time zone, as SQL. */
const at = (day: string) => `(timestamp '${day} 00:00:00' at time zone '${TZ}')`;
const nextDay = (day: string, n = 1) =>
  new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
const round2 = (n: number) => Math.round((n + Number.EPSILON) * 100) / 100;
const pct = (num: number, den: number) => (den === 0 ? 0 : round2((100 * num) / den));

async function engagement(query: { start_date?: string; end_date?: string; segment?: string } = PERIOD) {
  const { data, error } = await mcp.mcpEngagement({ query: { app_id: tenant.app.id, ...query } });
  expect(error, JSON.stringify(error)).toBeUndefined();
  return data!;
}

async function metric(name: 'dau' | 'mau', start_date: string, end_date: string) {
  const { data, error } = await tenant.client.analyticsMetrics({
    query: { app_id: tenant.app.id, metric: name, granularity: 'day', start_date, end_date },
  });
  expect(error).toBeUndefined();
  return data!.data.map((p) => p.value);
}

/** Hand-written retention: first local day of activity in [start, end], active again on that day + N. */
const retentionSql = (start: string, end: string, members = 'true') => `
  with days as (select distinct user_id, (created_at at time zone '${TZ}')::date as d from events),
  cohort as (
    select user_id, min(d) as d from days group by user_id
    having min(d) between date '${start}' and date '${end}'
  )
  select count(*) as cohort,
    ${[1, 7, 30]
      .map(
        (n) =>
          `count(*) filter (where exists (select 1 from days x where x.user_id = c.user_id and x.d = c.d + ${n})) as day_${n}`,
      )
      .join(',\n    ')}
  from cohort c where ${members}`;

describe('engagement', () => {
  for (const [label, query] of [
    ['a past period', PERIOD],
    ['the default period (30 days ending today)', {}],
  ] as const) {
    it(`matches the metrics endpoint and hand-written SQL over ${label}`, async () => {
      const body = await engagement(query);
      const { start_date, end_date } = body.period;
      if (!('start_date' in query)) expect(body.period).toEqual({ start_date: '2026-03-02', end_date: '2026-03-31' });
      expect(body.app_id).toBe(tenant.app.id);

      const daily = await metric('dau', start_date, end_date);
      expect(daily).toHaveLength(30 - (label === 'a past period' ? 1 : 0));
      expect(body.metrics.dau).toBe(round2(daily.reduce((a, b) => a + b, 0) / daily.length));
      expect(body.metrics.mau).toBe((await metric('mau', start_date, end_date)).at(-1));

      const [wau] = await sql(
        `select count(distinct user_id) as n from events
         where created_at >= ${at(nextDay(end_date, -6))} and created_at < ${at(nextDay(end_date))}`,
      );
      expect(body.metrics.wau).toBe(wau!.n);
      const { dau, wau: w, mau } = body.metrics;
      expect(body.metrics.stickiness).toEqual({
        daily_to_weekly: round2(dau / w),
        weekly_to_monthly: round2(w / mau),
        daily_to_monthly: round2(dau / mau),
      });
      expect(dau).toBeGreaterThan(5);
      expect(w).toBeGreaterThan(dau);
      expect(mau).toBeGreaterThanOrEqual(w);

      const [r] = (await sql(retentionSql(start_date, end_date))) as { [k: string]: number }[];
      expect(r!.cohort).toBeGreaterThan(10);
      expect(body.metrics.retention).toEqual({
        day_1: pct(r!.day_1!, r!.cohort!),
        day_7: pct(r!.day_7!, r!.cohort!),
        day_30: pct(r!.day_30!, r!.cohort!),
      });
      expect(body.metrics.retention.day_1).toBeGreaterThan(0);
    });
  }

  it('segments: each audience with its own dau and day-7 retention; segment picks one by id or name', async () => {
    const premium = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'Premium', criteria: 'users whose plan is premium' },
    });
    const french = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'France', criteria: 'users whose country is FR' },
    });
    expect(premium.error ?? french.error).toBeUndefined();
    const body = await engagement();
    // Both were created at the same (fixed) instant, so their order is the id's.
    expect(body.segments.map((s) => s.name).sort()).toEqual(['France', 'Premium']);
    const named = (name: string) => body.segments.find((s) => s.name === name)!;
    for (const [segment, member] of [
      [named('Premium'), `user_id in (select user_id from users where properties->>'plan' = 'premium')`],
      [named('France'), `user_id in (select user_id from users where properties->>'country' = 'FR')`],
    ] as const) {
      const [days] = await sql(
        `select count(*) as n from (select distinct user_id, (created_at at time zone '${TZ}')::date from events
           where created_at >= ${at(PERIOD.start_date)} and created_at < ${at(nextDay(PERIOD.end_date))} and ${member}) s`,
      );
      expect(segment.dau).toBe(round2((days!.n as number) / 29));
      const [r] = (await sql(retentionSql(PERIOD.start_date, PERIOD.end_date, member))) as { [k: string]: number }[];
      expect(segment.retention_day_7).toBe(pct(r!.day_7!, r!.cohort!));
      expect(segment.dau).toBeGreaterThan(0);
    }
    const byName = await engagement({ ...PERIOD, segment: 'Premium' });
    expect(byName.segments).toEqual([named('Premium')]);
    const byId = await engagement({ ...PERIOD, segment: french.data!.audience_id });
    expect(byId.segments).toEqual([named('France')]);
    expect(byId.metrics).toEqual(body.metrics);
    const unknown = await mcp.mcpEngagement({ query: { app_id: tenant.app.id, segment: 'Nobody' } });
    expect(unknown.response.status).toBe(404);
  });
});

describe('event analytics', () => {
  const where = `event_name = 'purchase' and created_at >= ${at(PERIOD.start_date)} and created_at < ${at(nextDay(PERIOD.end_date))}`;

  async function purchase(group_by: 'hour' | 'day' | 'week' | 'month', period = PERIOD) {
    const { data, error } = await mcp.mcpEventAnalytics({
      path: { eventName: 'purchase' },
      query: { app_id: tenant.app.id, group_by, ...period },
    });
    expect(error, JSON.stringify(error)).toBeUndefined();
    return data!;
  }

  it('totals and trends by day and week equal hand-written SQL', async () => {
    const byDay = await purchase('day');
    const [totals] = await sql(`select count(*) as n, count(distinct user_id) as users from events where ${where}`);
    expect(byDay).toMatchObject({
      event_name: 'purchase',
      app_id: tenant.app.id,
      period: PERIOD,
      total_events: totals!.n,
      unique_users: totals!.users,
    });
    expect(byDay.total_events).toBeGreaterThan(20);
    expect(byDay.trends).toHaveLength(29);
    for (const unit of ['day', 'week'] as const) {
      const body = unit === 'day' ? byDay : await purchase('week');
      const rows = await sql(
        `select to_char(date_trunc('${unit}', created_at at time zone '${TZ}'), 'YYYY-MM-DD') as date,
           count(*) as count, count(distinct user_id) as unique_users
         from events where ${where} group by 1 order by 1`,
      );
      expect(body.trends.filter((t) => t.count > 0)).toEqual(rows);
      expect(body.trends.reduce((s, t) => s + t.count, 0)).toBe(body.total_events);
    }
    const byWeek = await purchase('week');
    // Weeks start on Monday: 2026-02-09 is the Monday before the period's first day.
    expect(byWeek.trends.map((t) => t.date)).toEqual([
      '2026-02-09',
      '2026-02-16',
      '2026-02-23',
      '2026-03-02',
      '2026-03-09',
    ]);
    const byMonth = await purchase('month');
    expect(byMonth.trends.map((t) => t.date)).toEqual(['2026-02-01', '2026-03-01']);
    const byHour = await purchase('hour', { start_date: '2026-03-05', end_date: '2026-03-05' });
    expect(byHour.trends).toHaveLength(24);
    expect(byHour.trends[0]!.date).toBe('2026-03-05T00:00');
  });

  it('property aggregates and peak times equal hand-written SQL', async () => {
    const body = await purchase('day');
    const [revenue] = await sql(
      `select count(*) as count, min((properties->>'revenue')::numeric) as min, max((properties->>'revenue')::numeric) as max,
         round(avg((properties->>'revenue')::numeric), 2) as avg, sum((properties->>'revenue')::numeric) as sum
       from events where ${where}`,
    );
    expect(body.properties.revenue).toEqual({ type: 'number', ...revenue });
    const categories = await sql(
      `select properties->>'category' as value, count(*) as count from events where ${where}
       group by 1 order by 2 desc, 1 limit 10`,
    );
    expect(body.properties.category).toEqual({
      type: 'text',
      count: body.total_events,
      top_values: categories,
      top_values_from: body.total_events,
    });
    expect(Object.keys(body.properties).sort()).toEqual(['category', 'country', 'currency', 'item_id', 'revenue']);
    const [hour] = await sql(
      `select extract(hour from created_at at time zone '${TZ}')::int as h from events where ${where}
       group by 1 order by count(*) desc, 1 limit 1`,
    );
    const [day] = await sql(
      `select extract(isodow from created_at at time zone '${TZ}')::int as d from events where ${where}
       group by 1 order by count(*) desc, 1 limit 1`,
    );
    const names = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
    expect(body.peak_times).toEqual({ hour_of_day: hour!.h, day_of_week: names[(day!.d as number) - 1], timezone: TZ });
  });

  it("counts only the app's own events of that name, peak hour and weekday included", async () => {
    // Two more apps with the same event name at other hours and days: neither may count the other's.
    const [a, b] = [await server.createTenant(), await server.createTenant()];
    const taps = (n: number, at: string, properties: { size: number; color: string }) =>
      Array.from({ length: n }, (_, i) => ({ user_id: `t${i}`, event_name: 'tap', timestamp: at, properties }));
    const red = { size: 1, color: 'red' };
    await a.client.eventsTrackBatch({ body: { events: taps(2, '2026-03-02T09:05:00Z', red) } }); // Monday 09:00 UTC
    const blue = { size: 10, color: 'blue' };
    await b.client.eventsTrackBatch({ body: { events: taps(5, '2026-03-05T15:05:00Z', blue) } }); // Thursday 15:00 UTC
    const ask = (t: Tenant) =>
      createTallyClient({ baseUrl: server.url, mcpApiKey: t.mcpKey }).mcpEventAnalytics({
        path: { eventName: 'tap' },
        query: { app_id: t.app.id, ...PERIOD },
      });
    const [fromA, fromB] = [(await ask(a)).data!, (await ask(b)).data!];
    expect(fromA).toMatchObject({ total_events: 2, unique_users: 2 });
    expect(fromA.peak_times).toEqual({ hour_of_day: 9, day_of_week: 'Monday', timezone: 'UTC' });
    expect(fromB).toMatchObject({ total_events: 5, unique_users: 5 });
    expect(fromB.peak_times).toEqual({ hour_of_day: 15, day_of_week: 'Thursday', timezone: 'UTC' });
    // Property figures, from the rollup's deltas and, once folded, from its slots: each app's own.
    const own = (n: number, p: { size: number; color: string }) => ({
      size: { type: 'number', count: n, min: p.size, max: p.size, avg: p.size, sum: n * p.size },
      color: { type: 'text', count: n, top_values: [{ value: p.color, count: n }], top_values_from: n },
    });
    for (const fold of [false, true]) {
      if (fold) await foldRollups(server.db.knex);
      expect((await ask(a)).data!.properties, `folded: ${fold}`).toEqual(own(2, red));
      expect((await ask(b)).data!.properties, `folded: ${fold}`).toEqual(own(5, blue));
    }
  });

  it('an event nobody did: zeros, no properties, no peak', async () => {
    const { data } = await mcp.mcpEventAnalytics({
      path: { eventName: 'never_tracked' },
      query: { app_id: tenant.app.id, ...PERIOD },
    });
    expect(data).toMatchObject({ total_events: 0, unique_users: 0, properties: {} });
    expect(data!.trends.every((t) => t.count === 0 && t.unique_users === 0)).toBe(true);
    expect(data!.peak_times).toEqual({ hour_of_day: null, day_of_week: null, timezone: TZ });
  });
});

describe('funnels', () => {
  const STEPS = ['signup', 'item_view', 'add_to_cart', 'purchase'];

  /** Hand-written: enter at the first signup in the period, each step strictly later, within `days` of entry. */
  const funnelSql = (days: number) => {
    const ctes = [
      `s1 as (select user_id, min(created_at) as t0, min(created_at) as t from events
        where event_name = '${STEPS[0]}' and created_at >= ${at(PERIOD.start_date)} and created_at < ${at(nextDay(PERIOD.end_date))}
        group by user_id)`,
    ];
    for (let i = 1; i < STEPS.length; i++) {
      ctes.push(`s${i + 1} as (select p.user_id, p.t0, min(e.created_at) as t from s${i} p join events e
        on e.user_id = p.user_id and e.event_name = '${STEPS[i]}' and e.created_at > p.t
        and e.created_at <= p.t0 + interval '${days} days' group by p.user_id, p.t0)`);
    }
    return `with ${ctes.join(',\n')} select ${STEPS.map((_, i) => `(select count(*) from s${i + 1}) as s${i + 1}`).join(', ')}`;
  };

  for (const days of [1, 7]) {
    it(`steps equal hand-written SQL (time_window ${days})`, async () => {
      const { data, error } = await mcp.mcpFunnels({
        query: { app_id: tenant.app.id, events: STEPS, time_window: days, ...PERIOD },
      });
      expect(error, JSON.stringify(error)).toBeUndefined();
      const [row] = (await sql(funnelSql(days))) as Record<string, number>[];
      const users = STEPS.map((_, i) => row![`s${i + 1}`]!);
      expect(data!.steps.map((s) => s.users)).toEqual(users);
      expect(users[0]).toBeGreaterThan(10);
      expect(users[3]).toBeGreaterThan(0);
      expect(data!.funnel).toEqual({ events: STEPS, time_window: days });
      expect(data!.steps[0]).toEqual({ event: 'signup', users: users[0], conversion_rate: 100 });
      for (let i = 1; i < STEPS.length; i++) {
        expect(data!.steps[i]).toEqual({
          event: STEPS[i],
          users: users[i],
          conversion_rate: pct(users[i]!, users[0]!),
          dropoff_rate: pct(users[i - 1]! - users[i]!, users[i - 1]!),
        });
      }
      expect(data!.overall_conversion).toBe(pct(users[3]!, users[0]!));
      const rates = data!.steps.slice(1).map((s) => s.dropoff_rate!);
      const worst = rates.indexOf(Math.max(...rates));
      expect(data!.analysis).toMatchObject({
        biggest_dropoff: STEPS[worst + 1],
        dropoff_percentage: rates[worst],
      });
      expect(data!.analysis.recommendation).toContain(STEPS[worst + 1]!);
      expect(data!.analysis.recommendation).toContain(`${rates[worst]}%`);
    });
  }

  it('takes events comma-separated (as declared) or as a repeated parameter', async () => {
    const base = `${server.url}/mcp/analytics/funnels?app_id=${tenant.app.id}&start_date=${PERIOD.start_date}&end_date=${PERIOD.end_date}`;
    const get = async (q: string) => {
      const res = await fetch(`${base}&${q}`, { headers: { 'x-mcp-api-key': tenant.mcpKey } });
      return { status: res.status, body: await res.json() };
    };
    const comma = await get('events=signup,item_view,purchase');
    const repeated = await get('events=signup&events=item_view&events=purchase');
    expect(comma.status).toBe(200);
    expect(comma.body.funnel.events).toEqual(['signup', 'item_view', 'purchase']);
    expect(repeated).toEqual(comma);
    expect(await get('events=signup,item_view&events=purchase')).toEqual(comma);
    for (const q of [
      'events=signup',
      'events=signup,,purchase',
      `events=${Array(11).fill('a').join(',')}`,
      `events=a,b,c,d,e,f&events=g,h,i,j,k`,
      'events[a]=signup&events[b]=purchase',
    ]) {
      const res = await get(q);
      expect(res.status, q).toBe(400);
      expect(res.body.code).toBe('INVALID_REQUEST');
      expect(errorPaths(res.body)[0]).toMatch(/^\/query\/events/);
    }
  });
});
