// The metrics by hour through the activity rollup (analytics/queries/rollup-hours.ts) against raw
// events, in Asia/Kathmandu (+05:45: local hours start at :15 UTC), on a history built to reach
// each case of those queries: for the rolling 30-day figure, users active only in the left edge
// strip, only in the right one, in both (further apart than 30 days, and closer), in the whole days
// between, just outside the windows, only as bots, and users whose days in between exist only as
// unfolded deltas or were deleted after the fold; for retention, first events just before the
// range, in its last hour, behind a bot event, and moved earlier by a late event not yet folded;
// churn across midnight. Every figure is also checked by hand where the history makes it obvious.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeMetric, type MetricName, rollupAnswers } from '../../server/src/analytics/metrics.js';
import { foldRollups, rebuildRollups } from '../../server/src/analytics/rollups.js';
import type { IngestEvent } from '../../server/src/storage/event-rows.js';
import { zonedToInstant } from '../../server/src/time.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const ZONE = 'Asia/Kathmandu';
const NOW = new Date('2026-03-14T12:00:00Z');
const RANGE = { startDate: '2026-03-10', endDate: '2026-03-11' };
const METRICS: MetricName[] = ['dau', 'mau', 'retention', 'churn', 'arpu', 'conversion', 'revenue'];

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({}, { clock: () => NOW, jobs: () => false });
});
afterAll(async () => {
  await server?.close();
});

/** Events of users at local times in Kathmandu ('YYYY-MM-DD HH:MM'). */
async function write(t: Tenant, events: { user: string; at: string; bot?: boolean }[]) {
  const rows: IngestEvent[] = events.map((e, i) => ({
    appId: t.app.id,
    userRef: e.user,
    eventName: 'session',
    properties: {},
    createdAt: new Date(zonedToInstant(`${e.at}:00`, ZONE).getTime() + i),
    receivedAt: NOW,
    source: 'api',
    isBot: e.bot ?? false,
  }));
  await server.tally.context.ingestor.submit(rows);
}

const metric = (t: Tenant, name: MetricName, source?: 'raw') =>
  computeMetric(server.tally.context, {
    appId: t.app.id,
    metric: name,
    granularity: 'hour',
    timeZone: ZONE,
    conversionEvents: [],
    ...RANGE,
    ...(source && { source }),
  });

const valueAt = (series: { points: { date: string; value: number }[] }, date: string) =>
  series.points.find((p) => p.date === date)?.value;

describe('metrics by hour through the activity rollup, in a +05:45 zone', () => {
  it('equal raw events for every edge of the rolling window, retention cohort and churn', async () => {
    const t = await server.createTenant();
    const knex = server.db.knex;
    await knex('organizations').where({ id: t.organization.id }).update({ timezone: ZONE });
    // Ends run from 03-10 01:00 to 03-12 00:00: left strip [02-08 01:00, 02-10), days between
    // [02-10, 03-10), right strip [03-10, 03-12).
    await write(t, [
      { user: 'left', at: '2026-02-08 05:20' },
      { user: 'right', at: '2026-03-11 07:30' },
      { user: 'both-apart', at: '2026-02-09 10:15' },
      { user: 'both-apart', at: '2026-03-11 20:05' },
      { user: 'both-close', at: '2026-02-09 23:00' },
      { user: 'both-close', at: '2026-03-10 02:40' },
      { user: 'between', at: '2026-02-20 12:00' },
      { user: 'between', at: '2026-03-10 03:10' },
      { user: 'too-early', at: '2026-02-08 00:30' },
      { user: 'bot', at: '2026-02-09 09:00', bot: true },
      { user: 'bot', at: '2026-03-11 09:00', bot: true },
      { user: 'deleted-between', at: '2026-02-25 08:00' },
      { user: 'deleted-between', at: '2026-03-11 11:45' },
      { user: 'late-between', at: '2026-02-09 16:00' },
      // Retention: first events at 23:50 (retained at 00:10), just before the range, after a bot event.
      { user: 'night', at: '2026-03-10 23:50' },
      { user: 'night', at: '2026-03-11 00:10' },
      { user: 'last-hour', at: '2026-03-11 23:30' },
      { user: 'last-hour', at: '2026-03-12 00:20' },
      { user: 'before', at: '2026-03-09 23:59' },
      { user: 'before', at: '2026-03-10 00:05' },
      { user: 'bot-first', at: '2026-03-01 10:00', bot: true },
      { user: 'bot-first', at: '2026-03-10 09:00' },
      { user: 'moved-earlier', at: '2026-03-10 14:00' },
      { user: 'moved-earlier', at: '2026-03-10 15:10' },
      { user: 'touched-outside', at: '2026-03-10 08:00' },
    ]);
    await foldRollups(knex);
    await rebuildRollups(knex, { pauseFactor: 0, budgetMs: 60_000 });
    // After the fold: a day between only as an unfolded delta, a folded day between deleted, a
    // late event that makes a cohort user's first event earlier, and a delta outside the days between.
    await write(t, [
      { user: 'late-between', at: '2026-03-01 16:00' },
      { user: 'moved-earlier', at: '2026-03-05 14:00' },
      { user: 'touched-outside', at: '2026-03-11 06:00' },
    ]);
    const deleted = await knex('users').where({ app_id: t.app.id, external_id: 'deleted-between' }).first('id');
    await knex('events')
      .where({ app_id: t.app.id, user_id: deleted.id })
      .where('created_at', '<', new Date('2026-03-01T00:00:00Z'))
      .delete();
    expect(await knex('activity_deltas').where({ app_id: t.app.id }).first()).toBeDefined();
    expect(await rollupAnswers(server.tally.context, t.app.id, ZONE)).toBe(true);

    for (const name of METRICS) {
      expect(await metric(t, name), `${name} by hour`).toEqual(await metric(t, name, 'raw'));
    }

    const mau = await metric(t, 'mau');
    // Active in the days between every window has in common (03-09 23:59 and 03-05 included).
    const always = ['between', 'both-close', 'late-between', 'before', 'moved-earlier'];
    expect(valueAt(mau, '2026-03-10T00:00')).toBe(always.length + ['left', 'both-apart'].length);
    // 'left' (hour 02-08 05:00) counts up to the end 03-10 05:00, the bucket of 04:00.
    expect(valueAt(mau, '2026-03-10T04:00')).toBe(always.length + 2);
    expect(valueAt(mau, '2026-03-10T05:00')).toBe(always.length + 1);
    // 'both-apart' (02-09 10:00) leaves after the end 03-11 10:00 and comes back at 20:00.
    expect(valueAt(mau, '2026-03-11T10:00')).toBe(valueAt(mau, '2026-03-11T09:00')! - 1);
    expect(valueAt(mau, '2026-03-11T20:00')).toBe(valueAt(mau, '2026-03-11T19:00')! + 1);
    const retention = await metric(t, 'retention');
    expect(valueAt(retention, '2026-03-10T23:00')).toBe(100);
    expect(valueAt(retention, '2026-03-11T23:00')).toBe(100);
    // 'moved-earlier' came back at 15:10 but is no longer a cohort user of 14:00 (first on 03-05).
    expect(valueAt(retention, '2026-03-10T14:00')).toBe(0);
    const churn = await metric(t, 'churn');
    // 'before' active at 23:00 and 00:00, not at 01:00; 'night' at 23:00 and 00:00 the next day.
    expect(valueAt(churn, '2026-03-10T00:00')).toBe(0);
    expect(valueAt(churn, '2026-03-10T01:00')).toBe(100);
    expect(valueAt(churn, '2026-03-11T00:00')).toBe(0);
  });
});
