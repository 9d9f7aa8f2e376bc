// Migration 031 on a database whose activity rollup already holds rows: it fills the per-user
// totals (user_totals) from user_days, equal to the same sums counted here, and its triggers keep
// them equal through more events, deletions, an erasure and folds, dropping the rows of users left
// with nothing (questions read through them are compared with raw events in rollups.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../server/src/storage/db.js';
import * as m031 from '../../server/src/storage/migrations/031-user-totals.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { keptFromUserDays, rowsDiffering } from '../helpers/rollup-events.js';

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
    const { appId, ids } = await keptFromUserDays(
      db,
      'm031',
      m031,
      () => differences(db),
      async (id) => {
        const filled = await db('user_totals').where({ app_id: id }).count<{ n: string }[]>({ n: '*' });
        expect(Number(filled[0]!.n)).toBe(9);
      },
    );
    // A user with no event left has no row; every other user's totals are their human events.
    expect(await db('user_totals').where({ app_id: appId, user_id: ids[2]! }).first()).toBeUndefined();
    const totals = await db('user_totals').where({ app_id: appId }).select('user_id', 'events');
    const human = await db('events')
      .where({ app_id: appId, is_bot: false })
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
