// Migration 024 on a database that already holds events: the rollup starts `building`, metrics read
// raw events meanwhile (the same figures as before the upgrade), events keep arriving during the
// backfill, the backfill goes a bounded batch of users at a time and reports its progress, and
// once it is ready the rollup answers with the same figures as raw events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeMetric, type MetricName } from '../../server/src/analytics/metrics.js';
import { rebuildStep, rollupProgress } from '../../server/src/analytics/queries/rollups.js';
import { rebuildRollups } from '../../server/src/analytics/rollups.js';
import { loadConfig } from '../../server/src/config.js';
import type { ServiceContext } from '../../server/src/context.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m024 from '../../server/src/storage/migrations/024-activity-rollups.js';
import * as m026 from '../../server/src/storage/migrations/026-activity-days.js';
import * as m028 from '../../server/src/storage/migrations/028-event-slots.js';
import * as m030 from '../../server/src/storage/migrations/030-property-slots.js';
import * as m031 from '../../server/src/storage/migrations/031-user-totals.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import type { Unit } from '../../server/src/time.js';
import { openOwnDatabase } from '../helpers/own-database.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m024'));
});
afterAll(() => close?.());

const METRICS: MetricName[] = ['dau', 'mau', 'retention', 'revenue', 'arpu', 'conversion', 'churn'];
const UNITS: Unit[] = ['day', 'week', 'month'];
const ZONE = 'Asia/Kathmandu';

/** Users u00..u{n-1}, each with events on some of 20 days from 2026-03-01, a few with revenue, some bots. */
async function writeEvents(db: Database['knex'], appId: string, users: string[], salt: number): Promise<void> {
  const rows = [];
  for (const [i, id] of users.entries()) {
    for (let d = 0; d < 20; d++) {
      if ((i * 7 + d * 3 + salt) % 4 === 0) continue;
      const at = new Date(
        Date.parse('2026-03-01T00:00:00Z') + d * 86_400_000 + ((i * 37 + d * 53 + salt) % 1440) * 60_000,
      );
      const revenue = (i + d + salt) % 5 === 0 ? { revenue: (i % 7) + 0.25 } : {};
      rows.push({
        id: uuidv7(),
        app_id: appId,
        user_id: id,
        event_name: 'revenue' in revenue ? 'purchase' : 'session',
        properties: JSON.stringify(revenue),
        source: 'api',
        is_bot: (i + d) % 11 === 0,
        created_at: at,
        received_at: at,
      });
    }
  }
  for (let i = 0; i < rows.length; i += 500) await db('events').insert(rows.slice(i, i + 500));
}

async function allMetrics(ctx: ServiceContext, appId: string, source?: 'raw') {
  const out: Record<string, unknown> = {};
  for (const granularity of UNITS) {
    for (const metric of METRICS) {
      out[`${metric}/${granularity}`] = await computeMetric(ctx, {
        appId,
        metric,
        granularity,
        timeZone: ZONE,
        conversionEvents: [],
        startDate: '2026-02-26',
        endDate: '2026-03-24',
        source,
      });
    }
  }
  return out;
}

describe('migration 024 (activity rollup)', () => {
  it('backfills existing events in batches while metrics stay the same before, during and after', async () => {
    const db = database.knex;
    const ctx = {
      db,
      clock: () => new Date('2026-03-25T12:00:00Z'),
      config: loadConfig({ LOG_LEVEL: 'silent' }),
    } as unknown as ServiceContext;
    // The database as before 024 (026, 028, 030 and 031 build on 024's tables: down first, up after).
    await m031.down(db);
    await m030.down(db);
    await m028.down(db);
    await m026.down(db);
    await m024.down(db);
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm024' });
    await db('organizations').where({ id: org.id }).update({ timezone: ZONE });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm024' });
    const users = Array.from({ length: 23 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `u${i}` }));
    await db('users').insert(users);
    await writeEvents(db, app.id, users.map((u) => u.id).slice(0, 20), 0);
    const before = await allMetrics(ctx, app.id, 'raw');

    await m024.up(db);
    await m026.up(db);
    await m028.up(db);
    await m030.up(db);
    await m031.up(db);
    expect(await rollupProgress(db, app.id)).toEqual({ state: 'building', time_zone: ZONE, users_done: 0 });
    expect(await allMetrics(ctx, app.id)).toEqual(before);

    // Part of the way: 10 users recounted; metrics still read raw events, and say the same.
    expect(await rebuildStep(db, app.id, 5)).toBe(5);
    expect(await rebuildStep(db, app.id, 5)).toBe(5);
    expect(await rollupProgress(db, app.id)).toEqual({ state: 'building', time_zone: ZONE, users_done: 10 });
    expect(await allMetrics(ctx, app.id)).toEqual(before);

    // Events arrive during the backfill, for users already recounted and not yet.
    await writeEvents(db, app.id, users.map((u) => u.id).slice(3, 23), 1);
    const during = await allMetrics(ctx, app.id, 'raw');
    expect(during).not.toEqual(before);
    expect(await allMetrics(ctx, app.id)).toEqual(during);

    await rebuildRollups(db, { pauseFactor: 0, budgetMs: 60_000 });
    expect(await rollupProgress(db, app.id)).toEqual({ state: 'ready', time_zone: ZONE, users_done: 23 });
    const rows = await db('user_days').where({ app_id: app.id }).count<{ n: string }[]>({ n: '*' });
    expect(Number(rows[0]!.n)).toBeGreaterThan(100);
    expect(await allMetrics(ctx, app.id)).toEqual(during);
    // ...and the answer did come from the rollup: a row planted there shows.
    const planted = { app_id: app.id, day: '2026-03-02', user_id: uuidv7(), events: 1, revenue: 0, revenue_events: 0 };
    await db('user_days').insert(planted);
    const dau = (await allMetrics(ctx, app.id))['dau/day'] as { points: { date: string; value: number }[] };
    const rawDau = during['dau/day'] as typeof dau;
    expect(dau.points.find((p) => p.date === '2026-03-02')!.value).toBe(
      rawDau.points.find((p) => p.date === '2026-03-02')!.value + 1,
    );
    await db('user_days').where({ app_id: app.id, user_id: planted.user_id }).delete();

    // A time-zone change starts another build; raw events answer meanwhile, the rollup after.
    await db('organizations').where({ id: org.id }).update({ timezone: 'America/New_York' });
    const ny = async (source?: 'raw') =>
      computeMetric(ctx, {
        appId: app.id,
        metric: 'dau',
        granularity: 'day',
        timeZone: 'America/New_York',
        conversionEvents: [],
        startDate: '2026-02-26',
        endDate: '2026-03-24',
        source,
      });
    const nyRaw = await ny('raw');
    expect(await ny()).toEqual(nyRaw);
    await rebuildRollups(db, { pauseFactor: 0, budgetMs: 60_000 });
    expect(await rollupProgress(db, app.id)).toMatchObject({ state: 'ready', time_zone: 'America/New_York' });
    expect(await ny()).toEqual(nyRaw);
  }, 180_000);
});
