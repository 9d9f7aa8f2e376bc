// The event trend (GET /mcp/analytics/events/:eventName) over a period of more than 10,000 events
// of one name: counts, types and numeric figures count every event (from the per-property rollup,
// before and after its deltas are folded), while top values are counted in the 10,000 most recent
// events and say so (`top_values_from`). Through the generated client; the body is checked
// against the contract.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldAllOf } from '../helpers/rollup-events.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const EVENTS = 10_050;
let server: TestServer;
let tenant: Tenant;
let mcp: TallyClient;

beforeAll(async () => {
  server = await startTestServer({}, { clock: () => new Date('2026-03-05T12:00:00Z'), jobs: () => false });
  tenant = await server.createTenant();
  mcp = createTallyClient({ baseUrl: server.url, mcpApiKey: tenant.mcpKey });
  const [user] = await server.db
    .knex('users')
    .insert({ id: '01900000-0000-7000-8000-000000000001', app_id: tenant.app.id, external_id: 'u1' })
    .returning('id');
  // Event i at 2026-03-01 plus i seconds: `color` 'old' for the first 3,000, then red (odd) and blue
  // (even); `n` = i. One bot event and one event with a null colour, neither counted.
  await server.db.knex.raw(
    `insert into events (id, app_id, user_id, event_name, properties, source, is_bot, created_at, received_at)
     select gen_random_uuid(), ?::uuid, ?::uuid, 'tap',
            jsonb_build_object('color', case when i <= 3000 then 'old' when i % 2 = 1 then 'red' else 'blue' end, 'n', i),
            'api', false, timestamptz '2026-03-01 00:00:00+00' + i * interval '1 second', now()
     from generate_series(1, ?) i`,
    [tenant.app.id, user.id, EVENTS],
  );
  await server.db.knex('events').insert([
    {
      id: '01900000-0000-7000-8000-0000000000b1',
      app_id: tenant.app.id,
      user_id: user.id,
      event_name: 'tap',
      properties: JSON.stringify({ color: 'bot', n: 1e9 }),
      is_bot: true,
      created_at: '2026-03-01T10:00:00Z',
    },
    {
      id: '01900000-0000-7000-8000-0000000000c1',
      app_id: tenant.app.id,
      user_id: user.id,
      event_name: 'tap',
      properties: JSON.stringify({ color: null }),
      created_at: '2026-03-01T00:00:00Z',
    },
  ]);
}, 120_000);
afterAll(() => server?.close());

async function properties() {
  const { data, error } = await mcp.mcpEventAnalytics({
    path: { eventName: 'tap' },
    query: { app_id: tenant.app.id, start_date: '2026-03-01', end_date: '2026-03-01' },
  });
  expect(error, JSON.stringify(error)).toBeUndefined();
  expect(data!.total_events).toBe(EVENTS + 1);
  return data!.properties;
}

/**
 * Runs `check` while no fold can take the app's deltas: on PostgreSQL the suite's other servers
 * share the database and their fold jobs fold every app, so this holds the app's fold lock (the
 * transaction lock `tally_rollup:<app>` the fold tries, migration 024) meanwhile. The embedded
 * database is this server's alone (and its one connection must stay free for the request).
 */
async function beforeAnyFold(check: () => Promise<void>): Promise<void> {
  if (server.db.kind !== 'postgres') return check();
  await server.db.knex.transaction(async (trx) => {
    await trx.raw(`select pg_advisory_xact_lock(hashtextextended('tally_rollup:' || ?::text, 0))`, [tenant.app.id]);
    await check();
  });
}

describe('event trend over more than 10,000 events of a name', () => {
  it('counts every event, and top values in the 10,000 most recent, before and after a fold', async () => {
    const want = {
      // The 10,000 most recent events of the name: 51 to 10,050 (and the null-colour event is older).
      color: {
        type: 'text',
        count: EVENTS,
        top_values: [
          { value: 'blue', count: 3525 },
          { value: 'red', count: 3525 },
          { value: 'old', count: 2950 },
        ],
        top_values_from: 10_000,
      },
      n: { type: 'number', count: EVENTS, min: 1, max: EVENTS, sum: (EVENTS * (EVENTS + 1)) / 2, avg: 5025.5 },
    };
    await beforeAnyFold(async () => {
      expect(await server.db.knex('property_deltas').where({ app_id: tenant.app.id }).first()).toBeDefined();
      expect(await properties()).toEqual(want);
    });
    await foldAllOf(server.db.knex, tenant.app.id);
    expect(await server.db.knex('property_deltas').where({ app_id: tenant.app.id }).first()).toBeUndefined();
    expect(await properties()).toEqual(want);
  });
});
