// Analytics benchmark (PostgreSQL only): seeds about 1,000,000 demo events (10,000 users over 90
// days, seed 1) through the ingestion service into a database of its own, then measures the median
// latency of every metric (30 days by day, and 13 weeks by week) and of five natural-language
// questions. Creates and drops its database; stops by itself. Goal: under 1 s each (not a gate).
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/analytics.ts
import { randomBytes } from 'node:crypto';
import knexModule from 'knex';
import { computeMetric, type MetricName } from '../server/src/analytics/metrics.js';
import { answerQuery } from '../server/src/analytics/query.js';
import { loadConfig } from '../server/src/config.js';
import { uuidv7 } from '../server/src/ids.js';
import { createLogger } from '../server/src/logger.js';
import { insertApp, insertOrganization } from '../server/src/storage/tenancy.js';
import { createTally } from '../server/src/tally.js';
import { seedDemo } from '../server/src/tracking/demo.js';

const METRICS: MetricName[] = ['dau', 'mau', 'retention', 'revenue', 'arpu', 'conversion', 'churn'];
const QUESTIONS = [
  'unique users per day for the last 30 days',
  'total revenue by country last month',
  'top 5 events',
  'users with more than 200 events',
  'average revenue of purchases by week',
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

export async function benchAnalytics(adminUrl: string, options = { users: 10_000, days: 90 }) {
  const name = `tally_bench_analytics_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const admin = knexModule({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const config = loadConfig({ DATABASE_URL: url.toString(), LOG_LEVEL: 'warn' });
  const clock = () => new Date(`${END}T18:00:00Z`);
  const tally = await createTally(config, { logger: createLogger('warn'), clock });
  const { database } = tally;
  try {
    const ctx = tally.context;
    const org = await insertOrganization(database.knex, { id: uuidv7(), name: 'Bench' });
    const app = await insertApp(database.knex, { id: uuidv7(), organization_id: org.id, name: 'Bench app' });
    let t = performance.now();
    const seeded = await seedDemo(ctx, app.id, { ...options, seed: 1, end_date: END });
    const seedSeconds = Math.round((performance.now() - t) / 100) / 10;
    await database.knex.raw('vacuum analyze events');
    await database.knex.raw('vacuum analyze users');

    const figures: Record<string, number> = {};
    const weekStart = '2026-01-01';
    for (const metric of METRICS) {
      const base = { appId: app.id, metric, timeZone: 'UTC', conversionEvents: [] as string[] };
      figures[`${metric} day x30`] = await median(() =>
        computeMetric(ctx, { ...base, granularity: 'day', endDate: END }),
      );
      figures[`${metric} week x13`] = await median(() =>
        computeMetric(ctx, { ...base, granularity: 'week', startDate: weekStart, endDate: END }),
      );
    }
    for (const q of QUESTIONS) {
      figures[`nl: ${q}`] = await median(() => answerQuery(ctx, app, q));
    }
    t = performance.now();
    return {
      bench: 'analytics',
      database: 'postgresql',
      events: seeded.events,
      users: seeded.users,
      seed_seconds: seedSeconds,
      runs: RUNS,
      median_ms: figures,
    };
  } finally {
    await tally.close();
    await admin.raw(`drop database if exists ${name} with (force)`);
    await admin.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const adminUrl = process.env.BENCH_DATABASE_URL;
  if (!adminUrl) {
    console.error('Set BENCH_DATABASE_URL to a PostgreSQL server where the benchmark may create a database.');
    process.exit(2);
  }
  console.log(JSON.stringify(await benchAnalytics(adminUrl), null, 2));
}
