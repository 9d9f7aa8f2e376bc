// Migration 027 on a database whose activity rollup already holds rows: it fills the per-app daily
// sums (app_day_events) from user_days, equal to the same sums counted here, and its triggers keep
// them equal through more events, deletions and folds (questions read through them are compared
// with raw events in rollups.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m027 from '../../server/src/storage/migrations/027-app-day-events.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { rowsDiffering, writeRollupEvents } from '../helpers/rollup-events.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m027'));
});
afterAll(() => close?.());

const REFERENCE = `select app_id, day, sum(events)::bigint as events, sum(revenue_events)::bigint as revenue_events,
  sum(revenue)::numeric as revenue from user_days group by 1, 2`;
const KEPT = `select app_id, day, events, revenue_events, revenue from app_day_events
  where events <> 0 or revenue_events <> 0 or revenue <> 0`;

const differences = (db: Database['knex']) => rowsDiffering(db, REFERENCE, KEPT);

describe('migration 027 (per-app daily sums)', () => {
  it('fills them from user_days, and the triggers keep them equal to user_days', async () => {
    const db = database.knex;
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm027' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm027' });
    const users = Array.from({ length: 9 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `u${i}` }));
    await db('users').insert(users);
    const ids = users.map((u) => u.id);
    await writeRollupEvents(db, app.id, ids, 0);
    await foldRollups(db);

    // Before 027: user_days filled, the sums not there yet.
    await m027.down(db);
    await m027.up(db);
    const filled = await db('app_day_events').where({ app_id: app.id }).count<{ n: string }[]>({ n: '*' });
    expect(Number(filled[0]!.n)).toBeGreaterThan(15);
    expect(await differences(db)).toBe(0);

    await writeRollupEvents(db, app.id, ids.slice(3), 1);
    await foldRollups(db);
    expect(await differences(db)).toBe(0);

    await db('events')
      .where({ app_id: app.id })
      .whereRaw("created_at >= '2026-02-14' and created_at < '2026-02-17'")
      .delete();
    await db('events').where({ app_id: app.id, user_id: ids[2]! }).delete();
    await foldRollups(db);
    expect(await differences(db)).toBe(0);
    const total = await db('app_day_events').where({ app_id: app.id }).sum<{ n: string }[]>({ n: 'events' });
    const human = await db('events').where({ app_id: app.id, is_bot: false }).count<{ n: string }[]>({ n: '*' });
    expect(Number(total[0]!.n)).toBe(Number(human[0]!.n));
  }, 120_000);
});
