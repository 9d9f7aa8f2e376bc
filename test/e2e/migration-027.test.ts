// Migration 027 on a database whose activity rollup already holds rows: it fills the per-app daily
// sums (app_day_events) from user_days, equal to the same sums counted here, and its triggers keep
// them equal through more events, deletions and folds (questions read through them are compared
// with raw events in rollups.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../server/src/storage/db.js';
import * as m027 from '../../server/src/storage/migrations/027-app-day-events.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { keptFromUserDays, rowsDiffering } from '../helpers/rollup-events.js';

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
    const { appId } = await keptFromUserDays(
      db,
      'm027',
      m027,
      () => differences(db),
      async (id) => {
        const filled = await db('app_day_events').where({ app_id: id }).count<{ n: string }[]>({ n: '*' });
        expect(Number(filled[0]!.n)).toBeGreaterThan(15);
      },
    );
    const total = await db('app_day_events').where({ app_id: appId }).sum<{ n: string }[]>({ n: 'events' });
    const human = await db('events').where({ app_id: appId, is_bot: false }).count<{ n: string }[]>({ n: '*' });
    expect(Number(total[0]!.n)).toBe(Number(human[0]!.n));
  }, 120_000);
});
