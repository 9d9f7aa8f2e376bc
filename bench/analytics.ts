// Analytics benchmark: seeds demo data in bulk (bench/bulk-seed.ts: the demo generator's users and
// events, about 110 events per user over 90 days) into a database of its own, then measures the
// median latency of every metric at every granularity, read through the activity rollup (as the
// API does) and from raw events (`source: 'raw'`, the way before the rollup), the MCP engagement
// figures and event trend, and ten natural-language questions. Creates and drops its database (or
// keeps it: BENCH_ANALYTICS_KEEP, building any rollup a newer migration added first); stops by itself.
// On PostgreSQL (BENCH_DATABASE_URL) and on the embedded database (a scratch data directory).
// BENCH_ANALYTICS_USERS sets the scale (10,000 users: about a million events; 100,000: ten million).
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/analytics.ts
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexModule from 'knex';
import { engagement } from '../server/src/analytics/engagement.js';
import { eventAnalytics } from '../server/src/analytics/event-analytics.js';
import { computeMetric, type MetricName } from '../server/src/analytics/metrics.js';
import { answerQuery } from '../server/src/analytics/query.js';
import { rebuildRollups } from '../server/src/analytics/rollups.js';
import { loadConfig } from '../server/src/config.js';
import { uuidv7 } from '../server/src/ids.js';
import { createLogger } from '../server/src/logger.js';
import { type AppRow, insertApp, insertOrganization } from '../server/src/storage/tenancy.js';
import { createTally } from '../server/src/tally.js';
import type { Unit } from '../server/src/time.js';
import { bulkSeedDemo } from './bulk-seed.js';

const METRICS: MetricName[] = ['dau', 'mau', 'retention', 'revenue', 'arpu', 'conversion', 'churn'];
const QUESTIONS = [
  'unique users per day for the last 30 days',
  'total revenue by country last month',
  'top 5 events',
  'users with more than 200 events',
  'average revenue of purchases by week',
  // answered from the activity rollup's user_days (and the dau metric for users per day)
  'events per day in the last 30 days',
  'unique users per week',
  'revenue by week',
  // answered from the per-event rollup's event_slots (as is 'top 5 events', and purchases by week above)
  'purchases per day in the last 30 days',
  'events by hour of the day',
  // distinct users of one event name: raw events, read from the index by name alone (migration 029)
  'unique users with a purchase per week',
];
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const END = '2026-03-31';

async function median(run: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await run();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)]!);
}

/** The ranges measured: 30 days by day, 13 weeks by week, 3 months by month, 2 days by hour. */
const RANGES: { name: string; granularity: Unit; startDate?: string }[] = [
  { name: 'day x30', granularity: 'day' },
  { name: 'week x13', granularity: 'week', startDate: '2026-01-01' },
  { name: 'month x3', granularity: 'month', startDate: '2026-01-01' },
  { name: 'hour x48', granularity: 'hour', startDate: '2026-03-30' },
];

async function seedApp(database: Awaited<ReturnType<typeof createTally>>['database']) {
  const org = await insertOrganization(database.knex, { id: uuidv7(), name: 'Bench' });
  return insertApp(database.knex, { id: uuidv7(), organization_id: org.id, name: 'Bench app' });
}

/** Median times of every metric and range (through the rollup and, unless turned off, from raw events), MCP engagement and the questions. */
async function measure(ctx: Awaited<ReturnType<typeof createTally>>['context'], app: AppRow) {
  const rollup: Record<string, number> = {};
  const failed: Record<string, string> = {};
  const raw: Record<string, number> = {};
  // BENCH_ANALYTICS_ONLY=hour: only the figures whose name contains it (`hour`: the 48 hours of
  // every metric; `trend`: the MCP event trend; `nl:`: the questions).
  const only = process.env.BENCH_ANALYTICS_ONLY;
  const want = (name: string) => !only || name.includes(only);
  for (const metric of METRICS) {
    for (const range of RANGES.filter((r) => want(`${metric} ${r.name}`))) {
      const req = {
        appId: app.id,
        metric,
        timeZone: 'UTC',
        conversionEvents: [] as string[],
        ...range,
        endDate: END,
      };
      rollup[`${metric} ${range.name}`] = await median(() => computeMetric(ctx, req));
      if (process.env.BENCH_ANALYTICS_RAW !== '0') {
        raw[`${metric} ${range.name}`] = await median(() => computeMetric(ctx, { ...req, source: 'raw' }));
      }
    }
  }
  const engaged = 'mcp engagement (30 days)';
  if (want(engaged)) rollup[engaged] = await median(() => engagement(ctx, app, { endDate: END }));
  const trend = 'mcp event trend (purchase, 30 days by day)';
  if (want(trend)) {
    rollup[trend] = await median(() => eventAnalytics(ctx, app, 'purchase', { endDate: END, groupBy: 'day' }));
  }
  for (const q of QUESTIONS.filter((q) => want(`nl: ${q}`))) {
    // A question the engine refuses or stops (the embedded sandbox's time cap) is reported, not fatal.
    try {
      rollup[`nl: ${q}`] = await median(() => answerQuery(ctx, app, q));
    } catch (err) {
      failed[`nl: ${q}`] = (err as { code?: string }).code ?? String(err);
    }
  }
  return { rollup, raw, failed };
}

export async function benchAnalytics(
  adminUrl: string | undefined,
  users = Number(process.env.BENCH_ANALYTICS_USERS ?? 10_000),
) {
  // BENCH_ANALYTICS_KEEP=name: seed that database once and keep it, to measure again without seeding.
  const keep = process.env.BENCH_ANALYTICS_KEEP;
  const name = keep ?? `tally_bench_analytics_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const admin = adminUrl ? knexModule({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } }) : undefined;
  let dataDir: string | undefined;
  let env: Record<string, string>;
  if (admin && adminUrl) {
    const exists = await admin('pg_database').where({ datname: name }).first('datname');
    if (!exists) await admin.raw(`create database ${name}`);
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    env = { DATABASE_URL: url.toString() };
  } else {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-analytics-'));
    env = { DATA_DIR: dataDir };
  }
  const config = loadConfig({ ...env, LOG_LEVEL: 'warn', ANALYTICS_QUERY_TIMEOUT_MS: '60000' });
  const clock = () => new Date(`${END}T18:00:00Z`);
  const tally = await createTally(config, { logger: createLogger('warn'), clock, jobs: () => false });
  const { database } = tally;
  try {
    const ctx = tally.context;
    const kept = keep ? await database.knex('apps').where({ name: 'Bench app' }).first() : undefined;
    const app = kept ?? (await seedApp(database));
    const seeded = kept
      ? {
          events: Number((await database.knex('events').count({ n: '*' }).first())?.n),
          users,
          seed_seconds: 0,
          rollup_seconds: 0,
        }
      : await bulkSeedDemo(database, app.id, { users, days: 90, seed: 1, end_date: END });
    // Every table vacuumed and analyzed, as autovacuum would (off on these machines).
    if (!kept) await database.knex.raw('vacuum analyze');

    // A kept database from before a migration that adds a rollup: build it first, and say how long it took.
    const built = performance.now();
    const backfill = await rebuildRollups(database.knex, { pauseFactor: 0, budgetMs: 3_600_000 });
    const backfill_seconds = Math.round((performance.now() - built) / 100) / 10;

    const { rollup, raw, failed } = await measure(ctx, app);
    return {
      bench: 'analytics',
      database: database.kind,
      events: seeded.events,
      users: seeded.users,
      seed_seconds: seeded.seed_seconds,
      rollup_seconds: seeded.rollup_seconds,
      ...(backfill.users + backfill.events + backfill.properties > 0 ? { backfill, backfill_seconds } : {}),
      runs: RUNS,
      median_ms: rollup,
      median_ms_raw_events: raw,
      failed,
    };
  } finally {
    await tally.close();
    if (admin && !keep) {
      await admin.raw(`drop database if exists ${name} with (force)`);
    }
    await admin?.destroy();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await benchAnalytics(process.env.BENCH_DATABASE_URL), null, 2));
}
