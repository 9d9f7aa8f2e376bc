// `npm run bench`: runs the benchmarks and prints their figures as JSON lines.
// BENCH_DATABASE_URL adds a PostgreSQL pass (a database the benchmark may fill).
import { benchAnalytics } from './analytics.js';
import { benchIngest } from './ingest.js';

const results = [await benchIngest('pglite (embedded)')];
if (process.env.BENCH_DATABASE_URL) results.push(await benchIngest('postgresql', process.env.BENCH_DATABASE_URL));
for (const r of results) console.log(JSON.stringify(r));
// Analytics over 1,000,000 events: PostgreSQL only (it creates and drops its own database).
if (process.env.BENCH_DATABASE_URL) console.log(JSON.stringify(await benchAnalytics(process.env.BENCH_DATABASE_URL)));
