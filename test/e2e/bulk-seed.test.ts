// The benchmarks' bulk seeding (bench/bulk-seed.ts: rows written with the triggers off, rollups
// built by the rebuild-rollups backfill) against seed-demo through the ingestion service (rollups
// from the triggers' deltas, then folded): the same demo data, in an organization off UTC by
// +05:45, gives the same rows in every rollup table, so figures measured on a bulk-seeded database
// are those ingestion would give. Its own database: the backfill works every app that is building.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bulkSeedDemo } from '../../bench/bulk-seed.js';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { seedDemo } from '../../server/src/tracking/demo.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const ZONE = 'Asia/Kathmandu';
const OPTIONS = { users: 40, days: 14, seed: 5, end_date: '2026-03-31' };

let database: Database;
let closeDatabase: (() => Promise<void>) | undefined;
let server: TestServer;

beforeAll(async () => {
  ({ database, close: closeDatabase } = await openOwnDatabase('tally_bulk_seed'));
  server = await startTestServer({}, { database, clock: () => new Date('2026-04-01T12:00:00Z'), jobs: () => false });
});
afterAll(async () => {
  await server?.close();
  await closeDatabase?.();
});

/** Each rollup table's rows of an app, users named by their external id, in a fixed order. */
const TABLES: Record<string, string> = {
  user_days: `select u.external_id, r.day::text, r.events, r.revenue::text, r.revenue_events
    from user_days r join users u on u.app_id = r.app_id and u.id = r.user_id where r.app_id = ? order by 1, 2`,
  user_totals: `select u.external_id, r.events, r.revenue_events, r.revenue::text
    from user_totals r join users u on u.app_id = r.app_id and u.id = r.user_id where r.app_id = ? order by 1`,
  app_days: `select day::text, active, paying, revenue::text, first_users, first_next from app_days
    where app_id = ? and (active, paying, revenue, first_users, first_next) <> (0, 0, 0, 0, 0) order by 1`,
  app_periods: `select unit, start::text, active, paying, continued, first_users, first_next from app_periods
    where app_id = ? and (active, paying, continued, first_users, first_next) <> (0, 0, 0, 0, 0) order by 1, 2`,
  app_day_gaps: 'select day::text, gap, pairs from app_day_gaps where app_id = ? and pairs <> 0 order by 1, 2',
  app_day_events: `select day::text, events, revenue_events, revenue::text from app_day_events
    where app_id = ? and (events, revenue_events, revenue) <> (0, 0, 0) order by 1`,
  event_slots: `select slot::text, event_name, events, revenue::text, revenue_events from event_slots
    where app_id = ? and events <> 0 order by 1, 2`,
  property_slots: `select event_name, slot::text, key, strings, numbers, booleans, objects, arrays, num_sum::text,
    num_min::text, num_max::text from property_slots where app_id = ? order by 1, 2, 3`,
};

async function rollupRows(appId: string): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const [table, sql] of Object.entries(TABLES)) out[table] = (await database.knex.raw(sql, [appId])).rows;
  return out;
}

describe('bulk seeding for the benchmarks', () => {
  it('builds the same rollups as seed-demo through ingestion', async () => {
    const org = await insertOrganization(database.knex, { id: uuidv7(), name: 'bulk', timezone: ZONE });
    const bulk = await insertApp(database.knex, { id: uuidv7(), organization_id: org.id, name: 'bulk' });
    const ingested = await insertApp(database.knex, { id: uuidv7(), organization_id: org.id, name: 'ingested' });

    const seeded = await seedDemo(server.tally.context, ingested.id, OPTIONS);
    await foldRollups(database.knex);
    const written = await bulkSeedDemo(database, bulk.id, OPTIONS, ZONE);
    expect(written.events).toBe(seeded.events);
    expect(await database.knex('activity_deltas').where({ app_id: bulk.id }).first()).toBeUndefined();

    const [a, b] = [await rollupRows(bulk.id), await rollupRows(ingested.id)];
    expect(a.user_days!.length).toBeGreaterThan(40);
    expect(a.property_slots!.length).toBeGreaterThan(40);
    for (const table of Object.keys(TABLES)) expect(a[table], table).toEqual(b[table]);
    const state = await database.knex('app_rollups').where({ app_id: bulk.id }).first();
    expect(state).toMatchObject({ state: 'ready', events_state: 'ready', properties_state: 'ready', time_zone: ZONE });
  }, 120_000);
});
