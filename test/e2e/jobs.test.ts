// The job runner (pg-boss) started by the server: recurring schedules registered in the database,
// and the dedup purge run through it, deleting only the dedup rows older than the 7-day window.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PURGE_EVENT_DEDUP, REFRESH_SANDBOX_STATISTICS } from '../../server/src/jobs/index.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let a: Tenant;
let b: Tenant;
const DAY = 86_400_000;

async function waitForJob(name: string, id: string): Promise<string | null> {
  for (let i = 0; i < 300; i++) {
    const state = await server.jobs.state(name, id);
    if (state === 'completed' || state === 'failed') return state;
    await new Promise((r) => setTimeout(r, 100));
  }
  return server.jobs.state(name, id);
}

beforeAll(async () => {
  server = await startTestServer();
  a = await server.createTenant();
  b = await server.createTenant();
});
afterAll(() => server?.close());

describe('job runner', () => {
  it('registers the recurring jobs', async () => {
    const schedules = await server.jobs.schedules();
    expect(schedules).toContainEqual({ name: PURGE_EVENT_DEDUP, cron: '17 3 * * *' });
    if (server.db.kind === 'pglite') {
      expect(schedules).toContainEqual({ name: REFRESH_SANDBOX_STATISTICS, cron: '*/10 * * * *' });
    }
  });

  it('purges dedup rows past the 7-day window, in every app, and keeps the rest', async () => {
    for (const t of [a, b]) {
      const { response } = await t.client.eventsTrackBatch({
        body: {
          events: [
            { user_id: 'u', event_name: 'e', insert_id: 'fresh' },
            { user_id: 'u', event_name: 'e', insert_id: 'old' },
            { user_id: 'u', event_name: 'e', insert_id: 'edge' },
          ],
        },
      });
      expect(response.status).toBe(200);
      // age two of them: one well past the window, one just inside it
      const now = Date.now();
      await server.db
        .knex('event_dedup')
        .where({ app_id: t.app.id, insert_id: 'old' })
        .update({ received_at: new Date(now - 8 * DAY) });
      await server.db
        .knex('event_dedup')
        .where({ app_id: t.app.id, insert_id: 'edge' })
        .update({ received_at: new Date(now - 6.9 * DAY) });
    }
    const left = (t: Tenant) =>
      server.db.knex('event_dedup').where({ app_id: t.app.id }).orderBy('insert_id').pluck('insert_id');
    // On PostgreSQL every test file's server shares the database and so the job queue: the run may
    // be worked by another file's server whose clock is fixed in the past, for which nothing is past
    // the window yet. Queue it again (a few times at most) until this server's clock has decided.
    for (let attempt = 0; attempt < 5; attempt++) {
      const id = await server.jobs.runNow(PURGE_EVENT_DEDUP);
      expect(await waitForJob(PURGE_EVENT_DEDUP, id)).toBe('completed');
      if ((await left(a)).length === 2 && (await left(b)).length === 2) break;
    }
    for (const t of [a, b]) expect(await left(t)).toEqual(['edge', 'fresh']);
    // a repeat of the purged insert_id is stored again; one of a kept insert_id is still a duplicate
    const again = await a.client.eventsTrack({ body: { user_id: 'u', event_name: 'e', insert_id: 'old' } });
    expect(again.data).toMatchObject({ success: true });
    expect(again.data?.duplicate).toBeUndefined();
    const repeat = await a.client.eventsTrack({ body: { user_id: 'u', event_name: 'e', insert_id: 'edge' } });
    expect(repeat.data).toMatchObject({ duplicate: true });
  }, 60_000);
});
