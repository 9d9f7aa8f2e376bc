// Migration 028 on a database with events written before it: the per-event rollup (event_slots) is
// counted by the backfill in bounded steps, questions read raw events until it is done, and with
// events written, deleted and changed between the steps (before and after the backfill's cursor)
// the rollup ends equal to the same counts taken here from raw events; so it stays through folds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventRollupAnswers } from '../../server/src/analytics/metrics.js';
import { eventBackfillStep, eventRollupProgress } from '../../server/src/analytics/queries/rollups.js';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m028 from '../../server/src/storage/migrations/028-event-slots.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { openOwnDatabase } from '../helpers/own-database.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m028'));
});
afterAll(() => close?.());

const SLOT = `date_bin('15 minutes', created_at, timestamptz '2000-01-01 00:00:00+00')`;
const REVENUE = `coalesce(
  case when jsonb_typeof(properties->'revenue') = 'number' then (properties->>'revenue')::numeric end,
  case when jsonb_typeof(properties->'amount') = 'number' then (properties->>'amount')::numeric end)`;
/** Per app, slot and name, from raw events, written here. */
const REFERENCE = `select app_id, ${SLOT} as slot, event_name, count(*)::bigint as events,
  coalesce(sum(${REVENUE}), 0)::numeric as revenue, count(${REVENUE})::bigint as revenue_events
  from events where not is_bot group by 1, 2, 3`;
/** The same from the rollup: its folded rows plus the deltas not folded yet. */
const KEPT = `select app_id, slot, event_name, sum(events)::bigint as events, sum(revenue)::numeric as revenue,
  sum(revenue_events)::bigint as revenue_events
  from (select app_id, slot, event_name, events, revenue, revenue_events from event_slots
        union all select app_id, slot, event_name, events, revenue, revenue_events from event_deltas) k
  group by 1, 2, 3 having sum(events) <> 0 or sum(revenue) <> 0 or sum(revenue_events) <> 0`;

async function differences(db: Database['knex']): Promise<number> {
  const both = `(${REFERENCE} except ${KEPT}) union all (${KEPT} except ${REFERENCE})`;
  return Number((await db.raw(`select count(*)::int as n from (${both}) x`)).rows[0].n);
}

/** 20 days of events for each user, some bots, some carrying money; `salt` varies them. */
async function writeEvents(db: Database['knex'], appId: string, users: string[], salt: number): Promise<void> {
  const rows = [];
  for (const [i, id] of users.entries()) {
    for (let d = 0; d < 20; d++) {
      for (let k = 0; k < 3; k++) {
        if ((i * 3 + d * 7 + k + salt) % 4 === 0) continue;
        const minute = (i * 41 + d * 17 + k * 5 + salt * 13) % 1440;
        const at = new Date(Date.parse('2026-02-10T00:00:00Z') + d * 86_400_000 + minute * 60_000);
        const revenue = (i + d + k + salt) % 3 === 0 ? { amount: (i % 4) + 0.25 } : {};
        rows.push({
          id: uuidv7(),
          app_id: appId,
          user_id: id,
          event_name: 'amount' in revenue ? 'purchase' : k === 2 ? 'view' : 'session',
          properties: JSON.stringify(revenue),
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

describe('migration 028 (per-event rollup)', () => {
  it('counts existing events in steps while events keep changing, and questions read raw events until done', async () => {
    const db = database.knex;
    const ctx = { db };
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm028' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm028' });
    const users = Array.from({ length: 8 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `u${i}` }));
    await db('users').insert(users);
    const ids = users.map((u) => u.id);

    // Events from before 028: its tables and triggers taken away, the events written, then 028 again.
    await m028.down(db);
    await writeEvents(db, app.id, ids, 0);
    await m028.up(db);
    expect(await eventRollupProgress(db, app.id)).toEqual({ state: 'building', events_done: 0 });
    expect(await eventRollupAnswers(ctx, app.id)).toBe(false);

    // Steps of 40 events, with writes, deletions and changes in between.
    let steps = 0;
    for (;;) {
      const n = await eventBackfillStep(db, app.id, 40);
      if (n <= 0) break;
      steps++;
      if (steps === 2) await writeEvents(db, app.id, ids.slice(0, 3), 1); // before and after the cursor
      if (steps === 3) {
        await db('events').where({ app_id: app.id, user_id: ids[4]! }).delete();
        await foldRollups(db);
      }
      if (steps === 4) {
        await db('events')
          .where({ app_id: app.id, event_name: 'session' })
          .whereRaw("created_at < '2026-02-13'")
          .update({ event_name: 'renamed', properties: JSON.stringify({ revenue: 2 }) });
      }
      // Raw events answer until the last step has run.
      const state = (await eventRollupProgress(db, app.id))?.state;
      expect(await eventRollupAnswers(ctx, app.id)).toBe(state === 'ready');
      if (steps < 6) expect(state).toBe('building');
    }
    expect(steps).toBeGreaterThan(8);
    const progress = await eventRollupProgress(db, app.id);
    expect(progress?.state).toBe('ready');
    expect(progress!.events_done).toBeGreaterThan(300);
    expect(await eventRollupAnswers(ctx, app.id)).toBe(true);
    expect(await differences(db)).toBe(0);

    // Ready: more history, then folds, and still equal.
    await writeEvents(db, app.id, ids.slice(2), 2);
    await db('events')
      .where({ app_id: app.id })
      .whereRaw("created_at >= '2026-02-20' and created_at < '2026-02-21'")
      .delete();
    expect(await differences(db)).toBe(0);
    await foldRollups(db);
    expect(await db('event_deltas').where({ app_id: app.id }).first()).toBeUndefined();
    expect(await differences(db)).toBe(0);
    // A backfill step on a ready app does nothing.
    expect(await eventBackfillStep(db, app.id, 60)).toBe(0);
  }, 120_000);
});
