// Where the database's time goes in ingestion: a fresh Tally on a scratch PostgreSQL database with
// `track_functions = pl`, wrk's single events (32 connections) then batches of 100 (8 connections),
// BENCH_SECONDS each, and after each load the calls, total and self time of tally_ingest and of
// every trigger function (pg_stat_user_functions), per call and per event.
// `BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/function-times.ts`
import knexModule from 'knex';
import { compiledServer, event, scratchDatabase, tally } from './ingest.js';
import { BATCH_CONNECTIONS, BATCH_SIZE, CONNECTIONS } from './ingest-phases.js';
import { ensureWrk, runWrk } from './wrk.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 6);
const admin = process.env.BENCH_DATABASE_URL;
if (!admin) throw new Error('BENCH_DATABASE_URL is needed (pg_stat_user_functions is PostgreSQL)');

interface FunctionTimes {
  funcname: string;
  calls: string;
  total_time: number;
  self_time: number;
}

async function main() {
  await ensureWrk();
  const scratch = await scratchDatabase(admin!);
  const db = knexModule({ client: 'pg', connection: scratch.url, pool: { min: 0, max: 1 } });
  const server = await tally(scratch.url, {
    compiled: await compiledServer(),
    env: { PGOPTIONS: '-c track_functions=pl' },
  });
  try {
    const headers = { authorization: `Bearer ${server.apiKey}` };
    const loads = [
      { name: 'single', path: '/v1/events', body: JSON.stringify(event(1)), connections: CONNECTIONS, events: 1 },
      {
        name: 'batch',
        path: '/v1/events/batch',
        body: JSON.stringify({ events: Array.from({ length: BATCH_SIZE }, (_, i) => event(i)) }),
        connections: BATCH_CONNECTIONS,
        events: BATCH_SIZE,
      },
    ];
    for (const load of loads) {
      await runWrk({
        url: `${server.url}${load.path}`,
        body: load.body,
        headers,
        connections: load.connections,
        seconds: 1,
      });
      await db.raw('select pg_stat_reset()');
      const r = await runWrk({
        url: `${server.url}${load.path}`,
        body: load.body,
        headers,
        connections: load.connections,
        seconds,
      });
      await new Promise((done) => setTimeout(done, 800)); // the statistics collector's flush
      const { rows } = await db.raw<{ rows: FunctionTimes[] }>(
        `select funcname, calls, total_time, self_time from pg_stat_user_functions order by self_time desc`,
      );
      const events = r.perSecond * seconds * load.events;
      const ingest = rows.find((f) => f.funcname === 'tally_ingest');
      console.log(
        JSON.stringify({
          load: load.name,
          req_per_s: Math.round(r.perSecond),
          events,
          ingest_calls: Number(ingest?.calls ?? 0),
          events_per_call: ingest ? +(events / Number(ingest.calls)).toFixed(1) : null,
          functions: rows.slice(0, 12).map((f) => ({
            name: f.funcname,
            calls: Number(f.calls),
            total_ms_per_call: +(f.total_time / Number(f.calls)).toFixed(3),
            self_ms_per_call: +(f.self_time / Number(f.calls)).toFixed(3),
            self_us_per_event: +((f.self_time * 1000) / events).toFixed(1),
          })),
        }),
      );
    }
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
    await db.destroy();
    await scratch.drop();
  }
}

await main();
