// The event writer's groups in flight at once (PostgreSQL: the embedded database has one
// connection): eight groups on one hot event name all reach the shared counters at the same time
// and then commit, groups sharing users in opposite orders never deadlock, and a user erased or
// written through the REST API while its events are written is seen on the retry.
import type { Knex } from 'knex';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../server/src/metrics.js';
import { ClosedToBrowsersError, EventWriter, type IngestEvent } from '../../server/src/storage/event-writer.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { events, submitAsGroups, waitingCalls } from './ingest-helpers.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

const db = () => server.db.knex;
const onPostgres = () => server.db.kind === 'postgres';

describe('groups in flight at once on one hot event name (PostgreSQL)', () => {
  it('all eight get as far as the shared counters at the same time, then all commit', async (ctx) => {
    if (!onPostgres()) ctx.skip();
    const tenant = await server.createTenant();
    const appId = tenant.app.id;
    const writer = new EventWriter(db(), pino({ level: 'silent' }), undefined, undefined, { groupsInFlight: 8 });
    await writer.submit(events(appId, ['hot-seed'], ['hot']));
    // Another transaction holds the hot event name's dictionary row: each group can write everything
    // up to the shared counters, and then waits there.
    const blocker = await db().transaction();
    try {
      await blocker('event_definitions').where({ app_id: appId, event_name: 'hot' }).forUpdate().select('id');
      const requests = Array.from({ length: 8 }, (_, g) =>
        events(
          appId,
          Array.from({ length: 25 }, (_, u) => `hot-g${g}-u${u}`),
          ['hot'],
        ),
      );
      const written = await submitAsGroups(writer, requests);
      // Eight calls waiting at once: none of them waited for another one's whole write.
      let waiting = 0;
      for (let i = 0; i < 200 && waiting < 8; i++) {
        waiting = await waitingCalls(db());
        if (waiting < 8) await new Promise((r) => setTimeout(r, 50));
      }
      expect(waiting).toBe(8);
      await blocker.commit();
      const results = await Promise.all(written);
      expect(results.flat()).toHaveLength(8 * 25);
    } finally {
      if (!blocker.isCompleted()) await blocker.rollback();
    }
    const volume = await db()('event_definitions').where({ app_id: appId, event_name: 'hot' }).first('volume');
    expect(Number(volume.volume)).toBe(8 * 25 + 1);
    const daily = await db()('event_daily_counts')
      .where({ app_id: appId, event_name: 'hot' })
      .sum<{ sum: string }[]>('count as sum');
    expect(Number(daily[0]!.sum)).toBe(8 * 25 + 1);
  }, 60_000);

  it('groups that share users and two hot names in opposite orders never deadlock', async (ctx) => {
    if (!onPostgres()) ctx.skip();
    const tenant = await server.createTenant();
    const appId = tenant.app.id;
    const metrics = new Metrics();
    const writer = new EventWriter(db(), pino({ level: 'silent' }), undefined, metrics, { groupsInFlight: 8 });
    const users = Array.from({ length: 12 }, (_, u) => `shared-${u}`);
    for (let round = 0; round < 5; round++) {
      const requests = Array.from({ length: 8 }, (_, g) => {
        // Each group names the users in another order, and the two names in turn.
        const order = [...users.slice(g), ...users.slice(0, g)].reverse();
        return events(appId, order, g % 2 ? ['hot-a', 'hot-b'] : ['hot-b', 'hot-a']);
      });
      const results = await Promise.all(await submitAsGroups(writer, requests));
      expect(results.flat()).toHaveLength(8 * 12 * 2);
    }
    const retries = await metrics.ingestWriteRetries.get();
    expect(retries.values.filter((v) => v.labels.reason === 'deadlock').reduce((a, v) => a + v.value, 0)).toBe(0);
    const counts = await db()('users').where({ app_id: appId }).select('event_count');
    expect(counts.map((c) => Number(c.event_count))).toEqual(Array(12).fill(5 * 8 * 2));
  }, 60_000);
});

describe('a user changed while its events are written (PostgreSQL)', () => {
  /** Holds the user's row as an erasure or a REST write does, and runs `change` once a write waits for it. */
  async function whileWaiting(
    appId: string,
    externalId: string,
    change: (trx: Knex.Transaction, id: string) => Promise<unknown>,
    write: () => Promise<unknown>,
  ) {
    const blocker = await db().transaction();
    const user = await blocker('users').where({ app_id: appId, external_id: externalId }).forUpdate().first('id');
    const written = write().then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    try {
      let waiting = 0;
      for (let i = 0; i < 200 && waiting < 1; i++) {
        waiting = await waitingCalls(db());
        if (waiting < 1) await new Promise((r) => setTimeout(r, 25));
      }
      expect(waiting).toBe(1);
      await change(blocker, user.id);
      await blocker.commit();
    } finally {
      if (!blocker.isCompleted()) await blocker.rollback();
    }
    return { oldId: user.id as string, outcome: await written };
  }

  it('an erasure between resolving and locking the user: the events start a new user, as after an erasure', async (ctx) => {
    if (!onPostgres()) ctx.skip();
    const tenant = await server.createTenant();
    const appId = tenant.app.id;
    const metrics = new Metrics();
    const writer = new EventWriter(db(), pino({ level: 'silent' }), undefined, metrics);
    await writer.submit(events(appId, ['erased-u'], ['before']));
    const { oldId, outcome } = await whileWaiting(
      appId,
      'erased-u',
      async (trx, id) => {
        await trx('events').where({ app_id: appId, user_id: id }).delete();
        await trx('users').where({ app_id: appId, id }).delete();
      },
      () => writer.submit(events(appId, ['erased-u'], ['after'])),
    );
    expect(outcome).toHaveProperty('value');
    const user = await db()('users').where({ app_id: appId, external_id: 'erased-u' }).first();
    expect(user.id).not.toBe(oldId);
    expect(Number(user.event_count)).toBe(1);
    const rows = await db()('events').where({ app_id: appId }).select('user_id', 'event_name');
    expect(rows).toEqual([{ user_id: user.id, event_name: 'after' }]);
    const retries = await metrics.ingestWriteRetries.get();
    expect(retries.values.find((v) => v.labels.reason === 'changed')?.value).toBe(1);
  }, 30_000);

  it("a REST write between resolving and locking a website user: the browser's request is refused, nothing of it stored", async (ctx) => {
    if (!onPostgres()) ctx.skip();
    const tenant = await server.createTenant();
    const appId = tenant.app.id;
    const writer = new EventWriter(db(), pino({ level: 'silent' }), undefined, new Metrics());
    const browser = (name: string): IngestEvent[] =>
      events(appId, ['visitor-1'], [name]).map((e) => ({ ...e, source: 'website' as const }));
    await writer.submit(browser('first'));
    expect((await db()('users').where({ app_id: appId, external_id: 'visitor-1' }).first()).created_via).toBe(
      'website',
    );
    const { outcome } = await whileWaiting(
      appId,
      'visitor-1',
      (trx, id) => trx('users').where({ app_id: appId, id }).update({ api_written_at: new Date() }),
      () => writer.submit(browser('second')),
    );
    expect(outcome).toHaveProperty('error');
    expect((outcome as { error: unknown }).error).toBeInstanceOf(ClosedToBrowsersError);
    const rows = await db()('events').where({ app_id: appId }).select('event_name');
    expect(rows).toEqual([{ event_name: 'first' }]);
  }, 30_000);
});
