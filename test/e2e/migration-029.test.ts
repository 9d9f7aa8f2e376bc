// Migration 029: the index of events by app, name and time carries each event's user and bot
// flag, replacing the index of the same columns, so the MCP event trend counts a name's distinct
// human users per period from the index alone; the migration can run again after stopping part-way,
// and rolls back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EventWindow, eventTotalsAndTrend } from '../../server/src/analytics/queries/event-analytics.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m029 from '../../server/src/storage/migrations/029-event-name-covering.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { eventIndexes, openOwnDatabase } from '../helpers/own-database.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m029'));
});
afterAll(() => close?.());

const OLD = 'events_app_id_event_name_created_at_index';
const NEW = 'events_app_name_time_user';

const indexes = (db: Database['knex']) => eventIndexes(db, [OLD, NEW]);

const COVERING = { [NEW]: '(app_id, event_name, created_at) INCLUDE (user_id, is_bot)' };

describe('migration 029 (events by name carry their user)', () => {
  it('replaces the index by name and time with one that includes the user and bot flag, and rolls back', async () => {
    const db = database.knex;
    expect(await indexes(db)).toEqual(COVERING);
    await m029.down(db);
    expect(await indexes(db)).toEqual({ [OLD]: '(app_id, event_name, created_at)' });
    await m029.up(db);
    expect(await indexes(db)).toEqual(COVERING);
    // Run again, as after a run that stopped once the new index existed: the same result.
    await m029.up(db);
    expect(await indexes(db)).toEqual(COVERING);
    // The new index left invalid, as a failed CONCURRENTLY build leaves it: built again.
    await db.raw(`update pg_index set indisvalid = false where indexrelid = ?::regclass`, [NEW]);
    expect(await indexes(db)).toEqual({ [NEW]: `${COVERING[NEW]} INVALID` });
    await m029.up(db);
    expect(await indexes(db)).toEqual(COVERING);
  });

  it("answers a name's events and distinct human users per day from the index alone, as raw events say", async () => {
    const db = database.knex;
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm029' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm029' });
    const users = Array.from({ length: 12 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `u${i}` }));
    await db('users').insert(users);
    const rows = [];
    for (let i = 0; i < 600; i++) {
      const at = new Date(Date.parse('2026-02-10T00:00:00Z') + ((i * 7_919) % (10 * 86_400)) * 1000);
      rows.push({
        id: uuidv7(),
        app_id: app.id,
        user_id: users[(i * 5) % 12]!.id,
        event_name: i % 3 === 0 ? 'purchase' : 'view',
        properties: '{}',
        source: 'api',
        is_bot: i % 11 === 0,
        created_at: at,
        received_at: at,
      });
    }
    await db('events').insert(rows);
    await db.raw('vacuum analyze events');
    const w: EventWindow = {
      appId: app.id,
      eventName: 'purchase',
      timeZone: 'Asia/Kathmandu',
      from: '2026-02-10 00:00:00',
      to: '2026-02-21 00:00:00',
      timeoutMs: 10_000,
    };
    const { totals, trend } = await eventTotalsAndTrend(db, w, 'day');
    const reference = await db.raw(
      `select to_char(date_trunc('day', created_at at time zone 'Asia/Kathmandu'), 'YYYY-MM-DD HH24:MI') as k,
              count(*)::int as events, count(distinct user_id)::int as users
       from events where app_id = ? and event_name = 'purchase' and not is_bot group by 1`,
      [app.id],
    );
    expect(Object.fromEntries(trend)).toEqual(
      Object.fromEntries(
        reference.rows.map((r: { k: string; events: number; users: number }) => [
          r.k,
          { events: r.events, users: r.users },
        ]),
      ),
    );
    expect(totals.events).toBe(rows.filter((r) => r.event_name === 'purchase' && !r.is_bot).length);
    // The plan reads the index without the table's rows (scans other than by this index turned off,
    // so the plan shows what the index can answer, not what a small table makes cheapest).
    const plan = await db.transaction(async (tx) => {
      await tx.raw('set local enable_seqscan = off');
      await tx.raw('set local enable_bitmapscan = off');
      const { rows: lines } = await tx.raw(
        `explain select count(*), count(distinct user_id) from events
         where app_id = ? and event_name = 'purchase' and not is_bot
           and created_at >= '2026-02-10' and created_at < '2026-02-21'`,
        [app.id],
      );
      return lines.map((l: { 'QUERY PLAN': string }) => l['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain(`Index Only Scan using ${NEW} on events`);
  });
});
