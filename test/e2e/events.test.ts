// POST /v1/events and /v1/events/batch through @tally/client: storage, users created on the fly,
// counters, insert_id dedup, timestamps, limits and all-or-nothing batches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorPaths } from '../helpers/errors.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
});
afterAll(() => server?.close());

const db = () => server.db.knex;

async function userRow(externalId: string, appId = tenant.app.id) {
  return db()('users').where({ app_id: appId, external_id: externalId }).first();
}

describe('POST /v1/events', () => {
  it('records an event, creates its user and keeps the counters current', async () => {
    const { data, error } = await tenant.client.eventsTrack({
      body: { event_name: 'signup', user_id: 'ev-u1', properties: { plan: 'pro' }, ip: '10.0.0.1', ua: 'curl/8' },
    });
    expect(error).toBeUndefined();
    expect(data).toMatchObject({ success: true, event_id: expect.any(String), message: expect.any(String) });
    expect(data).not.toHaveProperty('duplicate');

    const user = await userRow('ev-u1');
    expect(user).toMatchObject({ event_count: '1' });
    const event = await db()('events').where({ app_id: tenant.app.id, id: data!.event_id }).first();
    expect(event).toMatchObject({
      user_id: user.id,
      event_name: 'signup',
      properties: { plan: 'pro' },
      ip: '10.0.0.1',
      ua: 'curl/8',
    });

    await tenant.client.eventsTrack({ body: { event_name: 'login', user_id: 'ev-u1' } });
    const after = await userRow('ev-u1');
    expect(after.event_count).toBe('2');
    expect(after.last_active.getTime()).toBeGreaterThanOrEqual(user.last_active.getTime());
  });

  it('uses the client timestamp as the event time and refuses one more than an hour ahead', async () => {
    const past = '2026-01-15T08:30:00.000Z';
    const { data } = await tenant.client.eventsTrack({
      body: { event_name: 'old', user_id: 'ev-ts', timestamp: past },
    });
    const event = await db()('events').where({ app_id: tenant.app.id, id: data!.event_id }).first();
    expect(event.created_at.toISOString()).toBe(past);
    expect(event.received_at.getTime()).toBeGreaterThan(Date.parse(past));

    const future = new Date(Date.now() + 2 * 3600_000).toISOString();
    const { error, response } = await tenant.client.eventsTrack({
      body: { event_name: 'x', user_id: 'ev-ts', timestamp: future },
    });
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: 'INVALID_REQUEST', details: { errors: [{ path: '/body/timestamp' }] } });
  });

  it('answers a repeated insert_id with the original event id and stores it once', async () => {
    const body = { event_name: 'purchase', user_id: 'ev-dup', insert_id: 'order-1001' };
    const first = await tenant.client.eventsTrack({ body });
    const second = await tenant.client.eventsTrack({ body: { ...body, properties: { retried: true } } });
    expect(second.data).toMatchObject({ success: true, event_id: first.data!.event_id, duplicate: true });
    const rows = await db()('events').where({ app_id: tenant.app.id, event_name: 'purchase' });
    expect(rows).toHaveLength(1);
    expect((await userRow('ev-dup')).event_count).toBe('1');
  });

  it('keeps insert_ids apart per app', async () => {
    const other = await server.createTenant();
    const body = { event_name: 'purchase', user_id: 'ev-dup', insert_id: 'order-shared' };
    const a = await tenant.client.eventsTrack({ body });
    const b = await other.client.eventsTrack({ body });
    expect(b.data?.duplicate).toBeUndefined();
    expect(b.data!.event_id).not.toBe(a.data!.event_id);
  });

  it.each([
    ['an empty user id', { event_name: 'x', user_id: '' }, '/body/user_id'],
    ['a placeholder user id', { event_name: 'x', user_id: 'undefined' }, '/body/user_id'],
    ['"null" as user id', { event_name: 'x', user_id: 'null' }, '/body/user_id'],
    ['"anonymous" as user id', { event_name: 'x', user_id: 'Anonymous' }, '/body/user_id'],
    ['a missing event name', { user_id: 'u' }, '/body/event_name'],
    ['an event name over 255 characters', { event_name: 'e'.repeat(256), user_id: 'u' }, '/body/event_name'],
    ['a user id over 255 characters', { event_name: 'e', user_id: 'u'.repeat(256) }, '/body/user_id'],
    ['an unknown field', { event_name: 'e', user_id: 'u', propertes: {} }, '/body/propertes'],
  ])('refuses %s with 400 naming the field', async (_label, body, path) => {
    const { error, response } = await tenant.client.eventsTrack({ body: body as never });
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ success: false, code: 'INVALID_REQUEST' });
    expect(errorPaths(error)).toContain(path);
  });

  it('refuses properties over 255 keys or 32 KB', async () => {
    const many = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`k${i}`, i]));
    const big = { blob: 'x'.repeat(33 * 1024) };
    for (const properties of [many, big]) {
      const { error, response } = await tenant.client.eventsTrack({
        body: { event_name: 'e', user_id: 'u-big', properties },
      });
      expect(response.status).toBe(400);
      expect(error).toMatchObject({ details: { errors: [{ path: '/body/properties' }] } });
    }
    expect(await userRow('u-big')).toBeUndefined();
  });

  it('keeps the event dictionary as events arrive', async () => {
    const t1 = '2026-03-01T10:00:00.000Z';
    const t2 = '2026-03-03T10:00:00.000Z';
    await tenant.client.eventsTrackBatch({
      body: {
        events: [
          { event_name: 'dict_event', user_id: 'd1', timestamp: t2 },
          { event_name: 'dict_event', user_id: 'd2', timestamp: t1 },
        ],
      },
    });
    await tenant.client.eventsTrack({ body: { event_name: 'dict_event', user_id: 'd1', timestamp: t1 } });
    const def = await db()('event_definitions').where({ app_id: tenant.app.id, event_name: 'dict_event' }).first();
    expect(def.first_seen.toISOString()).toBe(t1);
    expect(def.last_seen.toISOString()).toBe(t2);
    expect(def.volume).toBe('3');
    const days = await db()('event_daily_counts')
      .where({ app_id: tenant.app.id, event_name: 'dict_event' })
      .orderBy('day');
    expect(days.map((d) => Number(d.count))).toEqual([2, 1]);
  });
});

describe('POST /v1/events/batch', () => {
  it('stores every event and reports processed and duplicate counts', async () => {
    const events = [
      { event_name: 'view', user_id: 'b1', insert_id: 'bi-1' },
      { event_name: 'view', user_id: 'b2', insert_id: 'bi-2' },
      { event_name: 'view', user_id: 'b1', insert_id: 'bi-1' },
      { event_name: 'click', user_id: 'b2' },
    ];
    const { data } = await tenant.client.eventsTrackBatch({ body: { events } });
    expect(data).toMatchObject({ success: true, processed_count: 3, duplicates: 1 });
    const again = await tenant.client.eventsTrackBatch({ body: { events: events.slice(0, 2) } });
    expect(again.data).toMatchObject({ processed_count: 0, duplicates: 2 });
    expect((await userRow('b1')).event_count).toBe('1');
    expect((await userRow('b2')).event_count).toBe('2');
  });

  it('accepts 100 events and refuses 101 with 400', async () => {
    const make = (n: number) => Array.from({ length: n }, (_, i) => ({ event_name: 'bulk', user_id: `bulk-${i % 7}` }));
    const ok = await tenant.client.eventsTrackBatch({ body: { events: make(100) } });
    expect(ok.data?.processed_count).toBe(100);
    const tooMany = await tenant.client.eventsTrackBatch({ body: { events: make(101) } });
    expect(tooMany.response.status).toBe(400);
    expect(tooMany.error).toMatchObject({ code: 'INVALID_REQUEST', details: { errors: [{ path: '/body/events' }] } });
  });

  it('refuses an empty batch', async () => {
    const { response } = await tenant.client.eventsTrackBatch({ body: { events: [] } });
    expect(response.status).toBe(400);
  });

  it('is all or nothing: one bad event names every bad index and stores nothing', async () => {
    const future = new Date(Date.now() + 3 * 3600_000).toISOString();
    const { error, response } = await tenant.client.eventsTrackBatch({
      body: {
        events: [
          { event_name: 'aon', user_id: 'aon-1' },
          { event_name: 'aon', user_id: 'null' },
          { event_name: 'aon', user_id: 'aon-2' },
          { event_name: 'aon', user_id: 'aon-3', timestamp: future },
        ],
      },
    });
    expect(response.status).toBe(400);
    const paths = errorPaths(error);
    expect(paths).toEqual(['/body/events/1/user_id', '/body/events/3/timestamp']);
    expect(await db()('events').where({ app_id: tenant.app.id, event_name: 'aon' })).toHaveLength(0);
    expect(await userRow('aon-1')).toBeUndefined();
  });

  it('names contract violations of items by index', async () => {
    const { error } = await tenant.client.eventsTrackBatch({
      body: { events: [{ event_name: 'ok', user_id: 'x' }, { user_id: 'x' }] } as never,
    });
    expect(error).toMatchObject({ details: { errors: [{ path: '/body/events/1/event_name' }] } });
  });
});

describe('concurrent ingestion (group commit)', () => {
  it.each([
    ['the lean path', {}],
    ['the Express app (LEAN_INGESTION=off)', { LEAN_INGESTION: 'off' }],
  ])(
    'stores 2,000 events from 50 concurrent clients exactly once, with and without repeated insert_ids, through %s',
    async (_, env) => {
      const target = Object.keys(env).length === 0 ? server : await startTestServer(env, { database: server.db });
      const app = await target.createTenant();
      const clients = 50;
      const perClient = 40;
      try {
        await Promise.all(
          Array.from({ length: clients }, async (_, c) => {
            for (let i = 0; i < perClient; i++) {
              const n = c * perClient + i;
              // Every fourth event carries an insert_id that another client also sends.
              const insert_id = n % 4 === 0 ? `shared-${n % 400}` : undefined;
              const { error } = await app.client.eventsTrack({
                body: { event_name: 'load', user_id: `cc-${n % 25}`, insert_id, properties: { n } },
              });
              if (error) throw new Error(JSON.stringify(error));
            }
          }),
        );
      } finally {
        if (target !== server) await target.close();
      }
      const stored = await db()('events').where({ app_id: app.app.id }).count<{ count: string }[]>('* as count');
      const withInsertIds = new Set(
        Array.from({ length: 2000 }, (_, n) => n)
          .filter((n) => n % 4 === 0)
          .map((n) => n % 400),
      ).size;
      const expected = 2000 - 500 + withInsertIds;
      expect(Number(stored[0]!.count)).toBe(expected);
      const counts = await db()('users').where({ app_id: app.app.id }).sum<{ sum: string }[]>('event_count as sum');
      expect(Number(counts[0]!.sum)).toBe(expected);
      const perUser = await db()('events')
        .where({ 'events.app_id': app.app.id })
        .join('users', 'users.id', 'events.user_id')
        .groupBy('users.id', 'users.event_count')
        .select('users.event_count', db().raw('count(*) as n'));
      for (const row of perUser) expect(row.event_count).toBe(row.n);
    },
  );
});
