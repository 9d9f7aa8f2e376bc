// Retention benchmark (PostgreSQL): ingestion throughput while the retention job deletes
// 1,000,000 expired events, against ingestion alone before and after. Tally runs in its own
// process on a scratch database; the expired events are written straight into it (1,000 old
// users, one event every 10 s from 2020-01-01, with the users' counts, dictionary and daily
// counts they would have had); the app's retention is set to 30 days through the admin API; the
// job is queued on the job runner like a scheduled run, and the load generator measures in
// 5-second windows until the job has finished.
import fs from 'node:fs';
import path from 'node:path';
import PgBoss from 'pg-boss';
import { event, scratchDatabase, tally } from './ingest.js';
import { runLoad } from './load.js';

const EXPIRED = Number(process.env.BENCH_RETENTION_EVENTS ?? 1_000_000);
const WINDOW = 5;
const JOB = 'enforce-retention';

async function seedExpired(url: string, appId: string): Promise<number> {
  const { default: knex } = await import('knex');
  const db = knex({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
  const started = Date.now();
  await db.raw(
    `insert into users (id, app_id, external_id, created_at, updated_at)
     select gen_random_uuid(), ?::uuid, 'old-' || g, timestamptz '2020-01-01', timestamptz '2020-01-01'
     from generate_series(0, 999) g`,
    [appId],
  );
  await db.raw(
    `with u as (select array_agg(id order by id) as ids from users where app_id = ?::uuid and external_id like 'old-%')
     insert into events (id, app_id, user_id, event_name, properties, created_at, received_at)
     select gen_random_uuid(), ?::uuid, u.ids[g % 1000 + 1], case when g % 3 = 0 then 'old_purchase' else 'old_view' end,
            jsonb_build_object('i', g), timestamptz '2020-01-01' + g * interval '10 seconds', timestamptz '2020-01-01' + g * interval '10 seconds'
     from generate_series(0, ? - 1) g, u`,
    [appId, appId, EXPIRED],
  );
  await db.raw(
    `update users s set event_count = c.n, last_active = c.last
     from (select user_id, count(*) as n, max(created_at) as last from events where app_id = ?::uuid group by user_id) c
     where s.app_id = ?::uuid and s.id = c.user_id`,
    [appId, appId],
  );
  await db.raw(
    `insert into event_definitions (id, app_id, event_name, first_seen, last_seen, volume)
     select gen_random_uuid(), ?::uuid, event_name, min(created_at), max(created_at), count(*)
     from events where app_id = ?::uuid group by event_name`,
    [appId, appId],
  );
  await db.raw(
    `insert into event_daily_counts (app_id, event_name, day, count)
     select ?::uuid, event_name, (created_at at time zone 'UTC')::date, count(*)
     from events where app_id = ?::uuid group by 2, 3`,
    [appId, appId],
  );
  await db.raw('vacuum analyze events');
  await db.destroy();
  return Date.now() - started;
}

async function loads(url: string, apiKey: string, seconds: number) {
  const headers = { authorization: `Bearer ${apiKey}` };
  const single = await runLoad({
    url: `${url}/v1/events`,
    body: JSON.stringify(event(1)),
    headers,
    concurrency: 32,
    seconds,
    warmupSeconds: 0,
  });
  const batch = await runLoad({
    url: `${url}/v1/events/batch`,
    body: JSON.stringify({ events: Array.from({ length: 100 }, (_, i) => event(i)) }),
    headers,
    concurrency: 8,
    seconds,
    warmupSeconds: 0,
  });
  return { single, batch };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(xs.length, 1);

export async function benchRetention(adminDatabaseUrl: string) {
  const scratch = await scratchDatabase(adminDatabaseUrl);
  const server = await tally(scratch.url);
  try {
    const creds = JSON.parse(fs.readFileSync(path.join(server.dataDir, 'credentials.json'), 'utf8'));
    const seedMs = await seedExpired(scratch.url, creds.app_id);
    const set = await fetch(`${server.url}/admin/v1/apps/${creds.app_id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${creds.admin_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ retention_days: 30 }),
    });
    if (!set.ok) throw new Error(`could not set retention: ${set.status} ${await set.text()}`);

    await loads(server.url, server.apiKey, 1); // warm-up
    const before = await loads(server.url, server.apiKey, WINDOW * 2);

    const boss = new PgBoss({
      connectionString: scratch.url,
      schema: 'pgboss',
      supervise: false,
      schedule: false,
      migrate: false,
    });
    await boss.start();
    const started = Date.now();
    const id = await boss.send(JOB, {});
    if (!id) throw new Error('the retention job was not queued');
    const during: { single: number[]; batch: number[] } = { single: [], batch: [] };
    let state = 'created';
    while (state !== 'completed' && state !== 'failed') {
      const window = await loads(server.url, server.apiKey, WINDOW / 2);
      state = (await boss.getJobById(JOB, id, { includeArchive: true }))?.state ?? 'missing';
      // only windows that ended while the job was still running count as "during"
      if (state !== 'completed' && state !== 'failed') {
        during.single.push(window.single.perSecond);
        during.batch.push(window.batch.perSecond * 100);
      }
    }
    const jobMs = Date.now() - started;
    await boss.stop({ graceful: false, close: true });
    const after = await loads(server.url, server.apiKey, WINDOW * 2);

    const alone = {
      single: mean([before.single.perSecond, after.single.perSecond]),
      batch: mean([before.batch.perSecond, after.batch.perSecond]) * 100,
    };
    return {
      label: 'retention (postgresql)',
      expired_events: EXPIRED,
      seed_ms: seedMs,
      job_state: state,
      job_ms: jobMs,
      deleted_per_s: Math.round(EXPIRED / (jobMs / 1000)),
      windows_during: during.single.length,
      single_req_per_s: {
        before: Math.round(before.single.perSecond),
        during: Math.round(mean(during.single)),
        after: Math.round(after.single.perSecond),
        ratio: +(mean(during.single) / alone.single).toFixed(3),
      },
      batch_events_per_s: {
        before: Math.round(before.batch.perSecond * 100),
        during: Math.round(mean(during.batch)),
        after: Math.round(after.batch.perSecond * 100),
        ratio: +(mean(during.batch) / alone.batch).toFixed(3),
      },
      errors: before.single.errors + before.batch.errors + after.single.errors + after.batch.errors,
    };
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.on('exit', r));
    fs.rmSync(server.dataDir, { recursive: true, force: true });
    await scratch.drop();
  }
}
