// Retention through the job runner at a controllable clock: the daily job is scheduled; one run
// deletes exactly the events, visits and deliveries older than each app's retention_days (in
// batches, several here), corrects what was counted from the events, and touches nothing else:
// not the rows inside the period, not apps that keep data forever, not users or subscriptions.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { ENFORCE_RETENTION } from '../../server/src/jobs/index.js';
import { RETENTION_BATCH } from '../../server/src/privacy/retention.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let limited: Tenant;
let forever: Tenant;
let admin: TallyClient;
let now = new Date('2026-06-01T12:00:00.000Z');
const BULK = RETENTION_BATCH * 2 + 17; // expired events inserted directly: several batches

/** Event times relative to "now" (2026-06-01T12:00Z) with a 30-day period. */
const EXPIRED = ['2026-04-01T00:00:00.000Z', '2026-05-01T12:00:00.000Z', '2026-05-02T11:59:59.999Z'];
const KEPT = ['2026-05-02T12:00:00.000Z', '2026-05-20T08:00:00.000Z'];

async function seed(t: Tenant) {
  const events = [...EXPIRED, ...KEPT].map((timestamp, i) => ({
    user_id: i % 2 ? 'ret-a' : 'ret-b',
    event_name: i < EXPIRED.length ? 'old_event' : 'recent_event',
    timestamp,
  }));
  events.push({ user_id: 'ret-a', event_name: 'recent_event', timestamp: '2026-04-15T00:00:00.000Z' });
  const { error } = await t.client.eventsTrackBatch({ body: { events } });
  expect(error).toBeUndefined();
  // many more expired events of ret-a, through the API (so every count is kept as in production)
  const bulk = Array.from({ length: BULK }, (_, i) => ({
    user_id: 'ret-a',
    event_name: 'bulk',
    timestamp: new Date(Date.parse('2026-03-01T00:00:00Z') + i * 1000).toISOString(),
  }));
  for (let i = 0; i < bulk.length; i += 500) {
    const batches = [0, 100, 200, 300, 400]
      .map((o) => bulk.slice(i + o, i + o + 100))
      .filter((b) => b.length > 0)
      .map((b) => t.client.eventsTrackBatch({ body: { events: b } }));
    for (const r of await Promise.all(batches)) expect(r.error).toBeUndefined();
  }
  const knex = server.db.knex;
  const user = await knex('users').where({ app_id: t.app.id, external_id: 'ret-a' }).first();
  for (const created_at of [...EXPIRED, ...KEPT]) {
    await knex('visits').insert({
      id: uuidv7(),
      app_id: t.app.id,
      user_id: user.id,
      visitor_id: 'ret-a',
      visit_url: `https://example.com/${created_at}`,
      is_bot: false,
      created_at,
    });
    await knex('push_deliveries').insert({
      id: uuidv7(),
      app_id: t.app.id,
      user_id: user.id,
      provider: 'webhook',
      title: created_at,
      message: 'm',
      status: 'sent',
      created_at,
    });
  }
  await knex('push_subscriptions').insert({
    id: uuidv7(),
    app_id: t.app.id,
    user_id: user.id,
    endpoint: `https://push.example.com/${t.app.id}`,
    p256dh: 'p',
    auth: 'a',
    created_at: '2026-01-01T00:00:00Z',
  });
}

async function runJob(): Promise<string | null> {
  // The queue is shared by every server on the database (other test files too), and any of them
  // may take the run: the time it runs as of is sent with it (this server's clock).
  const id = await server.jobs.runNow(ENFORCE_RETENTION, { now: now.toISOString() });
  for (let i = 0; i < 600; i++) {
    const state = await server.jobs.state(ENFORCE_RETENTION, id);
    if (state === 'completed' || state === 'failed') return state;
    await new Promise((r) => setTimeout(r, 100));
  }
  return server.jobs.state(ENFORCE_RETENTION, id);
}

const times = async (table: string, appId: string) =>
  (await server.db.knex(table).where({ app_id: appId }).orderBy('created_at').select('created_at')).map((r) =>
    new Date(r.created_at).toISOString(),
  );

async function derived(appId: string) {
  const knex = server.db.knex;
  const users = await knex('users')
    .where({ app_id: appId })
    .orderBy('external_id')
    .select('external_id', 'event_count');
  const definitions = await knex('event_definitions').where({ app_id: appId }).orderBy('event_name');
  const days = await knex('event_daily_counts').where({ app_id: appId }).select('event_name', 'day', 'count');
  return {
    users: users.map((u) => [u.external_id, Number(u.event_count)]),
    volumes: definitions.map((d) => [d.event_name, Number(d.volume)]),
    days: days.map((d) => [d.event_name, new Date(d.day).toISOString().slice(0, 10), Number(d.count)]).sort(),
  };
}

beforeAll(async () => {
  server = await startTestServer({}, { clock: () => now });
  limited = await server.createTenant();
  forever = await server.createTenant();
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
  const { error } = await admin.adminAppsUpdate({ path: { app_id: limited.app.id }, body: { retention_days: 30 } });
  expect(error).toBeUndefined();
  await seed(limited);
  await seed(forever);
}, 120_000);
afterAll(() => server?.close());

describe('retention', () => {
  it('is a daily job on the job runner', async () => {
    expect(await server.jobs.schedules()).toContainEqual({ name: ENFORCE_RETENTION, cron: '41 2 * * *' });
  });

  it('deletes exactly the rows older than the period, and corrects the counts', async () => {
    const before = await derived(limited.app.id);
    const untouched = {
      events: await times('events', forever.app.id),
      derived: await derived(forever.app.id),
    };
    expect(await runJob()).toBe('completed');

    expect(await times('events', limited.app.id)).toEqual([...KEPT]);
    expect(await times('visits', limited.app.id)).toEqual([...KEPT]);
    expect(await times('push_deliveries', limited.app.id)).toEqual([...KEPT]);
    // users and subscriptions stay, with their event counts corrected
    expect(await server.db.knex('push_subscriptions').where({ app_id: limited.app.id })).toHaveLength(1);
    const after = await derived(limited.app.id);
    expect(after.users).toEqual([
      ['ret-a', 1],
      ['ret-b', 1],
    ]);
    expect(before.users).toEqual([
      ['ret-a', 3 + BULK],
      ['ret-b', 3],
    ]);
    expect(after.volumes).toEqual([
      ['bulk', 0],
      ['old_event', 0],
      ['recent_event', 2],
    ]);
    expect(after.days).toEqual([
      ['recent_event', '2026-05-02', 1],
      ['recent_event', '2026-05-20', 1],
    ]);

    // the app that keeps data forever is untouched
    expect(await times('events', forever.app.id)).toEqual(untouched.events);
    expect(await derived(forever.app.id)).toEqual(untouched.derived);
    expect(untouched.events).toHaveLength(EXPIRED.length + KEPT.length + 1 + BULK);
  }, 120_000);

  it('what is left is what the APIs see', async () => {
    const { data } = await limited.client.analyticsMetrics({
      query: {
        app_id: limited.app.id,
        metric: 'dau',
        granularity: 'day',
        start_date: '2026-04-30',
        end_date: '2026-05-03',
      },
    });
    expect(data!.data.map((d) => d.value)).toEqual([0, 0, 1, 0]);
    const res = await fetch(`${server.url}/v1/users/ret-a/export`, {
      headers: { authorization: `Bearer ${limited.apiKey}` },
    });
    const body = await res.json();
    expect(body.user.event_count).toBe(1);
    expect(body.events.map((e: { created_at: string }) => e.created_at)).toEqual([KEPT[0]]);
    expect(body.visits.map((v: { created_at: string }) => v.created_at)).toEqual(KEPT);
    expect(body.deliveries.map((d: { created_at: string }) => d.created_at)).toEqual(KEPT);
  });

  it('moves with the clock: a day later, the next day of data expires', async () => {
    now = new Date('2026-06-02T12:00:00.000Z');
    expect(await runJob()).toBe('completed');
    expect(await times('events', limited.app.id)).toEqual([KEPT[1]]);
    expect(await times('visits', limited.app.id)).toEqual([KEPT[1]]);
    expect((await derived(limited.app.id)).days).toEqual([['recent_event', '2026-05-20', 1]]);
    expect(await times('events', forever.app.id)).toHaveLength(EXPIRED.length + KEPT.length + 1 + BULK);
  }, 120_000);

  it('stops when the app keeps data forever again', async () => {
    await admin.adminAppsUpdate({ path: { app_id: limited.app.id }, body: { retention_days: null } });
    now = new Date('2027-01-01T00:00:00.000Z');
    expect(await runJob()).toBe('completed');
    expect(await times('events', limited.app.id)).toEqual([KEPT[1]]);
  }, 60_000);
});
