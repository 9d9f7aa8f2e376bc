// `npm run bench [-- ingest|ingest-memory|analytics|nl|retention|fairness|startup]`: runs the benchmarks and prints their
// figures as JSON lines. BENCH_DATABASE_URL (a PostgreSQL server where the benchmarks may create
// databases) adds the PostgreSQL passes; the retention benchmark runs only there. The
// fairness benchmark (5 minutes a database by default), the start-up benchmark (compiled server
// against tsx) and the memory benchmark of ingestion (a million events a database) run only when
// asked for by name.
import { benchAnalytics } from './analytics.js';
import { benchFairness } from './fairness.js';
import { benchIngest, benchIngestMemory } from './ingest.js';
import { benchNl } from './nl.js';
import { benchRetention } from './retention.js';
import { benchStartup } from './startup.js';

const only = process.argv[2];
const pg = process.env.BENCH_DATABASE_URL;
if (only === undefined || only === 'ingest') {
  // BENCH_ROLLUP=off measures PostgreSQL without the activity rollup's deltas (not the embedded database).
  if (process.env.BENCH_ROLLUP !== 'off') console.log(JSON.stringify(await benchIngest('pglite (embedded)')));
  if (pg) console.log(JSON.stringify(await benchIngest('postgresql', pg)));
}
if (only === 'ingest-memory') {
  console.log(JSON.stringify(await benchIngestMemory('pglite (embedded)')));
  if (pg) console.log(JSON.stringify(await benchIngestMemory('postgresql', pg)));
}
if (only === undefined || only === 'analytics') {
  // The embedded database first, then PostgreSQL when there is one.
  console.log(JSON.stringify(await benchAnalytics(undefined)));
  if (pg) console.log(JSON.stringify(await benchAnalytics(pg)));
}
if (only === undefined || only === 'nl') console.log(JSON.stringify(await benchNl()));
if ((only === undefined || only === 'retention') && pg) console.log(JSON.stringify(await benchRetention(pg)));
if (only === 'fairness') {
  console.log(JSON.stringify(await benchFairness('pglite (embedded)')));
  if (pg) console.log(JSON.stringify(await benchFairness('postgresql', pg)));
}
if (only === 'startup') console.log(JSON.stringify(await benchStartup(pg)));
