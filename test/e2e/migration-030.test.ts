// Migration 030 on a database with events written before it: the per-property rollup is counted by
// the backfill in bounded steps, the event trend reads raw events until it is done, and its report
// is the same before, during and after the backfill. With events written, deleted and changed
// between the steps (before and after the backfill's cursor), the rollup ends equal to raw events
// and to reference SQL (test/helpers/rollup-properties.ts); so it stays through folds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventAnalytics } from '../../server/src/analytics/event-analytics.js';
import { rollupsAnswer } from '../../server/src/analytics/metrics.js';
import { propertyBackfillStep } from '../../server/src/analytics/queries/rollups.js';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import type { ServiceContext } from '../../server/src/context.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m030 from '../../server/src/storage/migrations/030-property-slots.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { expectPropertyRollupEqualsRaw } from '../helpers/rollup-properties.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m030'));
});
afterAll(() => close?.());

const ZONE = 'Asia/Kathmandu';
const WINDOWS: [string, string][] = [
  ['2026-02-01 00:00:00', '2026-03-15 00:00:00'],
  ['2026-02-12 00:00:00', '2026-02-19 00:00:00'],
];

/** 20 days of events for each user with properties of every JSON type, some bots; `salt` varies them. */
async function writeEvents(db: Database['knex'], appId: string, users: string[], salt: number): Promise<void> {
  const rows = [];
  const kinds = [(n: number) => n * 1.5 - 7, (n: number) => `plan-${n % 3}`, (n: number) => n % 2 === 0, () => null];
  for (const [i, id] of users.entries()) {
    for (let d = 0; d < 20; d++) {
      for (let k = 0; k < 3; k++) {
        if ((i * 3 + d * 7 + k + salt) % 4 === 0) continue;
        const minute = (i * 41 + d * 17 + k * 5 + salt * 13) % 1440;
        const at = new Date(Date.parse('2026-02-10T00:00:00Z') + d * 86_400_000 + minute * 60_000);
        const n = i + d + k + salt;
        const properties = { value: kinds[n % 4]!(n), amount: n % 5, ...(n % 7 === 0 ? { tags: [n] } : {}) };
        rows.push({
          id: uuidv7(),
          app_id: appId,
          user_id: id,
          event_name: k === 2 ? 'view' : 'purchase',
          properties: JSON.stringify(properties),
          source: 'api',
          is_bot: d % 9 === 0,
          created_at: at,
          received_at: at,
        });
      }
    }
  }
  for (let i = 0; i < rows.length; i += 500) await db('events').insert(rows.slice(i, i + 500));
}

async function tenant(db: Database['knex'], name: string) {
  const org = await insertOrganization(db, { id: uuidv7(), name });
  await db('organizations').where({ id: org.id }).update({ timezone: ZONE });
  const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name });
  const users = Array.from({ length: 8 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `u${i}` }));
  await db('users').insert(users);
  return { app, ids: users.map((u) => u.id) };
}

describe('migration 030 (per-property rollup)', () => {
  it('counts existing events in steps; the event trend reads raw events until done, with the same report', async () => {
    const db = database.knex;
    const ctx = {
      db,
      clock: () => new Date('2026-03-20T12:00:00Z'),
      config: { analyticsQueryTimeoutMs: 30_000 },
    } as unknown as ServiceContext;
    const quiet = await tenant(db, 'm030 quiet');
    const busy = await tenant(db, 'm030 busy');

    // Events from before 030: its tables and triggers taken away, the events written, then 030 again.
    await m030.down(db);
    await writeEvents(db, quiet.app.id, quiet.ids, 0);
    await writeEvents(db, busy.app.id, busy.ids, 0);
    await m030.up(db);
    const report = () =>
      eventAnalytics(ctx, quiet.app, 'purchase', { startDate: '2026-02-01', endDate: '2026-03-14', groupBy: 'week' });
    const before = await report();
    expect(Object.keys(before.properties).sort()).toEqual(['amount', 'tags', 'value']);
    expect(before.properties.value?.type).toBe('mixed');

    for (const t of [quiet, busy]) {
      expect((await rollupsAnswer(ctx, t.app.id, ZONE)).propertyRollup).toBe(false);
      let steps = 0;
      for (;;) {
        const n = await propertyBackfillStep(db, t.app.id, 30);
        if (n <= 0) break;
        steps++;
        if (t === busy && steps === 2) await writeEvents(db, t.app.id, t.ids.slice(0, 3), 1);
        if (t === busy && steps === 3) {
          await db('events').where({ app_id: t.app.id, user_id: t.ids[4]! }).delete();
          await foldRollups(db);
        }
        if (t === busy && steps === 4) {
          await db('events')
            .where({ app_id: t.app.id, event_name: 'view' })
            .whereRaw("created_at < '2026-02-14'")
            .update({ event_name: 'purchase', properties: JSON.stringify({ amount: 99, value: 'moved' }) });
        }
        if (t === quiet) expect(await report(), `during the backfill, step ${steps}`).toEqual(before);
        const ready = (await rollupsAnswer(ctx, t.app.id, ZONE)).propertyRollup;
        if (steps < 6) expect(ready).toBe(false);
      }
      expect(steps).toBeGreaterThan(8);
      expect((await rollupsAnswer(ctx, t.app.id, ZONE)).propertyRollup).toBe(true);
    }
    const progress = await db('app_rollups').where({ app_id: quiet.app.id }).first('properties_done');
    expect(Number(progress.properties_done)).toBeGreaterThan(300);
    // After: the same report, now from the rollup.
    expect(await report()).toEqual(before);
    for (const t of [quiet, busy])
      await expectPropertyRollupEqualsRaw(db, t.app.id, ZONE, ['purchase', 'view'], WINDOWS);

    // Ready: more history, deletions and folds, and still equal.
    await writeEvents(db, busy.app.id, busy.ids.slice(2), 2);
    await db('events')
      .where({ app_id: busy.app.id })
      .whereRaw("created_at >= '2026-02-20' and created_at < '2026-02-21'")
      .delete();
    await expectPropertyRollupEqualsRaw(db, busy.app.id, ZONE, ['purchase', 'view'], WINDOWS);
    await foldRollups(db);
    expect(await db('property_deltas').where({ app_id: busy.app.id }).first()).toBeUndefined();
    await expectPropertyRollupEqualsRaw(db, busy.app.id, ZONE, ['purchase', 'view'], WINDOWS);
    // A backfill step on a ready app does nothing.
    expect(await propertyBackfillStep(db, busy.app.id, 60)).toBe(0);
  }, 120_000);
});
