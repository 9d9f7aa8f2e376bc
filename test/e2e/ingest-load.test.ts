// The event writer under load (issue 32): 10,000 events from 50 clients through the lean path, each
// acknowledged event found stored once with its user, properties and time; two apps written at the
// same time kept apart; and back-pressure: when the database stalls, requests past
// INGEST_QUEUE_LIMIT are refused at once with 503 and Retry-After, and every accepted one is stored.
// Groups in flight at once: ingest-concurrency.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';
import { post as postTo } from './ingest-helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const db = () => server.db.knex;
const post = (tenant: Tenant, path: string, body: unknown) => postTo(server.url, tenant, path, body);

interface Sent {
  n: number;
  user: string;
  timestamp: string;
  insertId?: string;
}

describe('10,000 events from 50 clients through the lean path', () => {
  it('stores every acknowledged event once, with its user, properties and time', async () => {
    const tenant = await server.createTenant();
    const base = Date.parse('2026-06-01T00:00:00.000Z');
    const sent = (n: number): Sent => ({
      n,
      user: `load-${n % 173}`,
      timestamp: new Date(base + n * 1000).toISOString(),
      // One event in ten repeats the insert_id of an earlier one: it must come back as a duplicate.
      ...(n % 10 === 9 ? { insertId: `iid-${n - 9}` } : n % 10 === 0 ? { insertId: `iid-${n}` } : {}),
    });
    const body = (s: Sent) => ({
      event_name: `load-${s.n % 3}`,
      user_id: s.user,
      timestamp: s.timestamp,
      properties: { n: s.n, text: `event ${s.n}` },
      ...(s.insertId ? { insert_id: s.insertId } : {}),
    });
    /** Single events: the id and duplicate flag each answer gave. */
    const acknowledged = new Map<number, { eventId: string; duplicate: boolean }>();
    const batches = { processed: 0, duplicates: 0, events: [] as number[] };
    // 50 clients, 200 events each: half one at a time, half in batches of 10.
    await Promise.all(
      Array.from({ length: 50 }, async (_, c) => {
        const mine = Array.from({ length: 200 }, (_, i) => sent(c * 200 + i));
        for (const s of mine.slice(0, 100)) {
          const r = await post(tenant, '/v1/events', body(s));
          expect(r.status).toBe(200);
          acknowledged.set(s.n, { eventId: r.body.event_id as string, duplicate: r.body.duplicate === true });
        }
        for (let i = 100; i < 200; i += 10) {
          const batch = mine.slice(i, i + 10);
          const r = await post(tenant, '/v1/events/batch', { events: batch.map(body) });
          expect(r.status).toBe(200);
          batches.processed += r.body.processed_count as number;
          batches.duplicates += r.body.duplicates as number;
          batches.events.push(...batch.map((s) => s.n));
        }
      }),
    );
    expect(acknowledged.size + batches.events.length).toBe(10_000);

    const rows: { id: string; external_id: string; event_name: string; properties: { n: number }; created_at: Date }[] =
      await db()('events as e')
        .join('users as u', function () {
          this.on('u.id', 'e.user_id').andOn('u.app_id', 'e.app_id');
        })
        .where('e.app_id', tenant.app.id)
        .select('e.id', 'u.external_id', 'e.event_name', 'e.properties', 'e.created_at');
    const byN = new Map<number, (typeof rows)[number]>();
    for (const r of rows) {
      expect(byN.has(r.properties.n), `event ${r.properties.n} stored twice`).toBe(false);
      byN.set(r.properties.n, r);
    }
    // Every event is stored once, as sent, except the repeats of an insert_id (n ending in 9).
    for (let n = 0; n < 10_000; n++) {
      const row = byN.get(n);
      if (n % 10 === 9) {
        expect(row, `event ${n} repeats an insert_id`).toBeUndefined();
        continue;
      }
      const s = sent(n);
      expect(row, `event ${n}`).toBeDefined();
      expect(row!.external_id).toBe(s.user);
      expect(row!.event_name).toBe(`load-${n % 3}`);
      expect(row!.created_at.toISOString()).toBe(s.timestamp);
    }
    expect(rows.length).toBe(9_000);
    // Each answer said what happened to its events.
    for (const [n, ack] of acknowledged) {
      expect(ack.duplicate).toBe(n % 10 === 9);
      expect(ack.eventId).toBe(byN.get(n % 10 === 9 ? n - 9 : n)!.id);
    }
    const repeatsInBatches = batches.events.filter((n) => n % 10 === 9).length;
    expect(batches.duplicates).toBe(repeatsInBatches);
    expect(batches.processed).toBe(batches.events.length - repeatsInBatches);

    // The counters agree with the rows.
    const users: { external_id: string; event_count: string; last_active: Date }[] = await db()('users')
      .where({ app_id: tenant.app.id })
      .select('external_id', 'event_count', 'last_active');
    const perUser = new Map<string, { n: number; last: number }>();
    for (const r of rows) {
      const u = perUser.get(r.external_id) ?? { n: 0, last: 0 };
      u.n++;
      u.last = Math.max(u.last, r.created_at.getTime());
      perUser.set(r.external_id, u);
    }
    expect(users.length).toBe(perUser.size);
    for (const u of users) {
      expect(Number(u.event_count)).toBe(perUser.get(u.external_id)!.n);
      expect(u.last_active.getTime()).toBe(perUser.get(u.external_id)!.last);
    }
    const daily = await db()('event_daily_counts')
      .where({ app_id: tenant.app.id })
      .sum<{ sum: string }[]>('count as sum');
    expect(Number(daily[0]!.sum)).toBe(rows.length);
    const volume = await db()('event_definitions')
      .where({ app_id: tenant.app.id })
      .sum<{ sum: string }[]>('volume as sum');
    expect(Number(volume[0]!.sum)).toBe(rows.length);
  }, 120_000);
});

describe('two apps written at the same time', () => {
  it("keeps each app's users, aliases, insert_ids and counters apart", async () => {
    const a = await server.createTenant();
    const b = await server.createTenant();
    // App A knows `alias-x` as an alias of its user `shared`; in app B it is a user of its own.
    await a.client.eventsTrack({ body: { event_name: 'seed', user_id: 'shared' } });
    const alias = await a.client.usersCreateAlias({ body: { user_id: 'shared', alias_id: 'alias-x' } });
    expect(alias.response.status).toBe(200);
    const body = (extra: Record<string, unknown>) => ({ event_name: 'both', insert_id: 'same-iid', ...extra });
    const [ra, rb, rc] = await Promise.all([
      post(a, '/v1/events', body({ user_id: 'shared' })),
      post(b, '/v1/events', body({ user_id: 'shared' })),
      post(b, '/v1/events', { event_name: 'aliased', user_id: 'alias-x' }),
    ]);
    expect([ra.status, rb.status, rc.status]).toEqual([200, 200, 200]);
    expect(ra.body.duplicate).toBeUndefined();
    expect(rb.body.duplicate).toBeUndefined();
    const userA = await db()('users').where({ app_id: a.app.id, external_id: 'shared' }).first();
    const userB = await db()('users').where({ app_id: b.app.id, external_id: 'shared' }).first();
    expect(userA.id).not.toBe(userB.id);
    expect([Number(userA.event_count), Number(userB.event_count)]).toEqual([2, 1]);
    const stored = async (tenant: Tenant, id: unknown) =>
      db()('events').where({ app_id: tenant.app.id, id }).first('user_id');
    expect((await stored(a, ra.body.event_id)).user_id).toBe(userA.id);
    expect((await stored(b, rb.body.event_id)).user_id).toBe(userB.id);
    const aliasedInB = await db()('users').where({ app_id: b.app.id, external_id: 'alias-x' }).first();
    expect(aliasedInB).toBeDefined();
    expect((await stored(b, rc.body.event_id)).user_id).toBe(aliasedInB.id);
    const volume = async (tenant: Tenant) =>
      Number(
        (await db()('event_definitions').where({ app_id: tenant.app.id, event_name: 'both' }).first('volume')).volume,
      );
    expect([await volume(a), await volume(b)]).toEqual([1, 1]);
  });
});

describe('back-pressure when the database falls behind', () => {
  it('refuses requests past INGEST_QUEUE_LIMIT with 503 and Retry-After, and stores every accepted one', async () => {
    const limited = await startTestServer({ INGEST_QUEUE_LIMIT: '100' }, { database: server.db });
    try {
      const tenant = await limited.createTenant();
      // A first event warms the key and app caches, so that later requests need the database only to write.
      const first = await fetch(`${limited.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ event_name: 'warm', user_id: 'bp-0' }),
      });
      expect(first.status).toBe(200);
      // The database stalls: a transaction holds the daily counts' table (on the embedded
      // database it holds its one connection), so every write waits.
      const stall = await db().transaction();
      const send = (i: number) =>
        fetch(`${limited.url}/v1/events/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            events: Array.from({ length: 10 }, (_, k) => ({
              event_name: 'bp',
              user_id: `bp-${i}`,
              properties: { i, k },
            })),
          }),
        });
      let accepted: Promise<Response>[] = [];
      let refusal: Response | undefined;
      try {
        await stall.raw('lock table event_daily_counts in exclusive mode');
        // 10 batches of 10 fill the queue; the eleventh is refused at once.
        accepted = Array.from({ length: 10 }, (_, i) => send(i + 1));
        for (let i = 0; i < 200 && limited.tally.context.ingestor.queuedEvents < 100; i++) {
          await new Promise((r) => setTimeout(r, 20));
        }
        expect(limited.tally.context.ingestor.queuedEvents).toBe(100);
        refusal = await send(11);
      } finally {
        await stall.commit();
      }
      expect(refusal!.status).toBe(503);
      expect(refusal!.headers.get('retry-after')).toBe('1');
      const envelope = (await refusal!.json()) as { success: boolean; code: string; message: string };
      expect(envelope).toMatchObject({ success: false, code: 'SERVICE_UNAVAILABLE' });
      expect(envelope.message).toMatch(/nothing of this request was stored/);
      const answers = await Promise.all(accepted);
      expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
      const stored = await db()('events')
        .where({ app_id: tenant.app.id, event_name: 'bp' })
        .count<{ n: string }[]>('* as n');
      expect(Number(stored[0]!.n)).toBe(100);
      // The refused batch left nothing behind, and once the queue drains events are taken again.
      expect(await db()('users').where({ app_id: tenant.app.id, external_id: 'bp-11' }).first()).toBeUndefined();
      expect((await send(12)).status).toBe(200);
      const refusedTotal = await limited.tally.metrics.ingestRefusedFull.get();
      expect(refusedTotal.values[0]!.value).toBe(1);
    } finally {
      await limited.close();
    }
  }, 60_000);
});
