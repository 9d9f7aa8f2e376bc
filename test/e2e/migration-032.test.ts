// Migration 032: the partial index of the events that carry money (a `revenue` or `amount` key), by
// app and time, also holds their name and properties, replacing migration 004's; the migration
// runs again after stopping part-way and rolls back. A question on money by a property names the index's condition, reads the index
// alone, and answers as raw events say (through the API, as an integrator asks it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m032 from '../../server/src/storage/migrations/032-money-events.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import { eventIndexes, openOwnDatabase } from '../helpers/own-database.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const INDEX = m032.MONEY_INDEX;
const OLD = 'events_app_revenue_time';
const CONDITION = `WHERE ((NOT is_bot) AND ((properties ? 'revenue'::text) OR (properties ? 'amount'::text)))`;
const DEFINITION = `(app_id, created_at) INCLUDE (user_id, event_name, properties) ${CONDITION}`;

let database: Database;
let close: (() => Promise<void>) | undefined;
let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m032'));
  server = await startTestServer({}, { clock: () => new Date('2026-03-14T12:00:00Z'), jobs: () => false });
  tenant = await server.createTenant();
});
afterAll(async () => {
  await close?.();
  await server?.close();
});

const indexes = (db: Database['knex']) => eventIndexes(db, [INDEX, OLD]);

describe('migration 032 (an index of the events that carry money)', () => {
  it("replaces migration 004's index of money events with one that holds their name and properties, and rolls back", async () => {
    const db = database.knex;
    expect(await indexes(db)).toEqual({ [INDEX]: DEFINITION });
    await m032.down(db);
    expect(await indexes(db)).toEqual({ [OLD]: `(app_id, created_at) INCLUDE (user_id) ${CONDITION}` });
    await m032.up(db);
    expect(await indexes(db)).toEqual({ [INDEX]: DEFINITION });
    // Run again, as after a run that stopped once the new index existed: the same result.
    await m032.up(db);
    expect(await indexes(db)).toEqual({ [INDEX]: DEFINITION });
    // Left invalid, as a failed CONCURRENTLY build leaves it: built again.
    await db.raw(`update pg_index set indisvalid = false where indexrelid = ?::regclass`, [INDEX]);
    expect(await indexes(db)).toEqual({ [INDEX]: `${DEFINITION} INVALID` });
    await m032.up(db);
    expect(await indexes(db)).toEqual({ [INDEX]: DEFINITION });
  });

  it("reads a period's money events from the index alone", async () => {
    const db = database.knex;
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm032' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm032' });
    const user = { id: uuidv7(), app_id: app.id, external_id: 'u' };
    await db('users').insert(user);
    const rows = Array.from({ length: 300 }, (_, i) => {
      const at = new Date(Date.parse('2026-02-01T00:00:00Z') + i * 3_600_000);
      const properties = i % 3 === 0 ? { revenue: i, country: 'DE' } : i % 3 === 1 ? { amount: 2 } : { page: '/' };
      return {
        id: uuidv7(),
        app_id: app.id,
        user_id: user.id,
        event_name: i % 3 === 2 ? 'view' : 'purchase',
        properties: JSON.stringify(properties),
        source: 'api',
        created_at: at,
        received_at: at,
      };
    });
    await db('events').insert(rows);
    await db.raw('vacuum analyze events');
    const plan = await db.transaction(async (tx) => {
      await tx.raw('set local enable_seqscan = off');
      await tx.raw('set local enable_bitmapscan = off');
      const { rows: lines } = await tx.raw(
        `explain select e.properties ->> 'country', sum((e.properties ->> 'revenue')::numeric) from events e
         where e.app_id = ? and not e.is_bot and e.created_at >= '2026-02-03' and e.created_at < '2026-02-10'
           and (e.properties \\? 'revenue' or e.properties \\? 'amount') group by 1`,
        [app.id],
      );
      return lines.map((l: { 'QUERY PLAN': string }) => l['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain(`Index Only Scan using ${INDEX} on events`);
  });
});

describe('a question on money by a property', () => {
  it('names the condition of the money index and answers as raw events say', async () => {
    const at = (day: number, hour: number) => new Date(Date.UTC(2026, 1, day, hour)).toISOString();
    const events = [
      { user_id: 'ann', event_name: 'purchase', timestamp: at(3, 9), properties: { revenue: 20, country: 'DE' } },
      { user_id: 'bob', event_name: 'purchase', timestamp: at(4, 9), properties: { amount: 5.5, country: 'FR' } },
      { user_id: 'bob', event_name: 'refund', timestamp: at(5, 9), properties: { revenue: -3, country: 'DE' } },
      // No money, money as text, no country, and another month: not counted.
      { user_id: 'cat', event_name: 'view', timestamp: at(6, 9), properties: { country: 'DE' } },
      { user_id: 'cat', event_name: 'purchase', timestamp: at(6, 10), properties: { revenue: '9', country: 'IT' } },
      { user_id: 'cat', event_name: 'purchase', timestamp: at(7, 10), properties: { revenue: 4 } },
      {
        user_id: 'dan',
        event_name: 'purchase',
        timestamp: '2026-03-02T09:00:00Z',
        properties: { revenue: 7, country: 'FR' },
      },
    ];
    const sent = await tenant.client.eventsTrackBatch({ body: { events } });
    expect(sent.response.status).toBe(200);
    const res = await tenant.client.analyticsQuery({
      body: { app_id: tenant.app.id, query: 'total revenue by country last month' },
    });
    expect(res.response.status, JSON.stringify(res.error)).toBe(200);
    expect(res.data?.sql).toContain("(e.properties ? 'revenue' or e.properties ? 'amount')");
    expect(res.data?.data).toEqual([
      { country: 'DE', value: 17 },
      { country: 'FR', value: 5.5 },
    ]);
  });
});
