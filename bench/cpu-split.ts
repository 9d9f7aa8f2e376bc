// Where the CPU goes under the ingestion benchmark's load: a fresh Tally on a scratch PostgreSQL
// database (BENCH_DATABASE_URL), wrk for 6 s three times (single events on 32 connections, or
// batches of 100 on 8), and the CPU time that Tally's process and PostgreSQL's processes used in
// each run (from /proc: user + system), per event and in cores. Only those two: wrk's own time
// cannot be read once it has exited. `npx tsx bench/cpu-split.ts [single|batch]`.
import fs from 'node:fs';
import { event, scratchDatabase, tally } from './ingest.js';
import { BATCH_SIZE } from './ingest-phases.js';
import { ensureWrk, runWrk } from './wrk.js';

/** CPU ticks (1/100 s) used so far by the processes `take` picks from /proc. */
function ticks(take: (command: string, pid: number) => boolean): number {
  let sum = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    if (!take(command, Number(entry))) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    sum += Number(fields[11]) + Number(fields[12]); // utime, stime
  }
  return sum;
}

const admin = process.env.BENCH_DATABASE_URL;
if (!admin) throw new Error('BENCH_DATABASE_URL is needed (PostgreSQL runs in processes of its own)');
ensureWrk();
const kind = process.argv[2] === 'batch' ? 'batch' : 'single';
const perRequest = kind === 'single' ? 1 : BATCH_SIZE;
const scratch = await scratchDatabase(admin);
const t = await tally(scratch.url, { compiled: true });
const load = {
  url: `${t.url}/v1/events${kind === 'single' ? '' : '/batch'}`,
  body: JSON.stringify(
    kind === 'single' ? event(1) : { events: Array.from({ length: BATCH_SIZE }, (_, i) => event(i)) },
  ),
  headers: { authorization: `Bearer ${t.apiKey}`, 'content-type': 'application/json' },
  connections: kind === 'single' ? 32 : 8,
};
try {
  await runWrk({ ...load, seconds: 2 }); // warm-up
  for (let run = 1; run <= 3; run++) {
    const read = () => ({
      tally: ticks((_, pid) => pid === t.child.pid),
      postgres: ticks((c) => c.startsWith('postgres')),
    });
    const before = read();
    const w = await runWrk({ ...load, seconds: 6 });
    const after = read();
    const events = w.requests * perRequest;
    const split = (k: 'tally' | 'postgres') => ({
      cpu_us_per_event: Math.round(((after[k] - before[k]) * 10_000) / events),
      cores: +((after[k] - before[k]) / 100 / w.seconds).toFixed(2),
    });
    console.log(
      JSON.stringify({
        kind,
        run,
        events_per_s: Math.round(events / w.seconds),
        tally: split('tally'),
        postgres: split('postgres'),
      }),
    );
  }
} finally {
  t.child.kill('SIGTERM');
  await new Promise((r) => t.child.once('exit', r));
  await scratch.drop();
}
