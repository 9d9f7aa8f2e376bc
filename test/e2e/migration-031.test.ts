// Migration 031 on a database whose activity rollup already holds rows: it fills the per-user
// totals (user_totals) from user_days, equal to the same sums counted here, and its triggers keep
// them equal through more events, deletions, an erasure and folds, dropping the rows of users left
// with nothing (questions read through them are compared with raw events in rollups.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m031 from '../../server/src/storage/migrations/031-user-totals.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { rowsDiffering, writeRollupEvents } from '../helpers/rollup-events.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m031'));
});
afterAll(() => close?.());

const REFERENCE = `select app_id, user_id, sum(events)::bigint as events, sum(revenue_events)::bigint as revenue_events,
  sum(revenue)::numeric as revenue from user_days group by 1, 2`;
const KEPT = 'select app_id, user_id, events, revenue_events, revenue from user_totals';

const differences = (db: Database['knex']) => rowsDiffering(db, REFERENCE, KEPT);

describe('migration 031 (per-user totals)', () => {
  it('fills them from user_days, and the triggers keep them equal to user_days', async () => {
    const db = database.knex;
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm031' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm031' });
    const users = Array.from({ length: 9 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `u${i}` }));
    await db('users').insert(users);
    const ids = users.map((u) => u.id);
    await writeRollupEvents(db, app.id, ids, 0);
    await foldRollups(db);

    // Before 031: user_days filled, the totals not there yet.
    await m031.down(db);
    await m031.up(db);
    const filled = await db('user_totals').where({ app_id: app.id }).count<{ n: string }[]>({ n: '*' });
    expect(Number(filled[0]!.n)).toBe(9);
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
    // A user with no event left has no row; every other user's totals are their human events.
    expect(await db('user_totals').where({ app_id: app.id, user_id: ids[2]! }).first()).toBeUndefined();
    const totals = await db('user_totals').where({ app_id: app.id }).select('user_id', 'events');
    const human = await db('events')
      .where({ app_id: app.id, is_bot: false })
      .groupBy('user_id')
      .select('user_id', db.raw('count(*)::bigint as events'));
    const byUser = (rows: { user_id: string; events: string | number }[]) =>
      Object.fromEntries(rows.map((r) => [r.user_id, Number(r.events)]));
    expect(byUser(totals)).toEqual(byUser(human));
    expect(Object.keys(byUser(totals))).toHaveLength(8);

    // Down and up again: the same rows.
    await m031.down(db);
    await m031.up(db);
    expect(await differences(db)).toBe(0);
  }, 120_000);
});
