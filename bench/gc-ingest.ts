// What the garbage collector costs single events: a fresh Tally (compiled, `--trace-gc-nvp`),
// single events on a fixed schedule (open loop, bench/open-loop.ts) at BENCH_GC_RATE a second
// (2,000) for BENCH_SECONDS (10), and from V8's trace of that window: the collections, their
// pauses (median, largest, total), the bytes allocated per answered request and those promoted to
// the old generation, beside the open loop's p50 and p99.
// `BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx bench/gc-ingest.ts`
// (without it, the embedded database). BENCH_NODE_ARGS adds flags to the server's node (a young
// generation of another size: `--max-semi-space-size=64`); BENCH_GC_TRACE=<file> keeps the trace lines.
import fs from 'node:fs';
import { compiledServer, event, scratchDatabase, tally } from './ingest.js';
import { openLoop } from './open-loop.js';

const rate = Number(process.env.BENCH_GC_RATE ?? 2000);
const seconds = Number(process.env.BENCH_SECONDS ?? 10);

/** A field of one line of `--trace-gc-nvp` (`pause=9.7 ... allocated=14304248`). */
const field = (line: string, name: string) => Number(line.match(new RegExp(`\\b${name}=([\\d.]+)`))?.[1] ?? 0);

async function main() {
  const admin = process.env.BENCH_DATABASE_URL;
  const scratch = admin ? await scratchDatabase(admin) : undefined;
  const lines: string[] = [];
  let measuring = false;
  const server = await tally(scratch?.url, {
    compiled: await compiledServer(),
    nodeArgs: ['--trace-gc-nvp', ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [])],
    onLine: (line) => {
      if (measuring) lines.push(line);
    },
  });
  const load = { url: `${server.url}/v1/events`, headers: { authorization: `Bearer ${server.apiKey}` } };
  const body = JSON.stringify(event(1));
  try {
    await openLoop({ ...load, body, rate: rate / 4, seconds: 2, warmupSeconds: 1 });
    measuring = true;
    const run = await openLoop({ ...load, body, rate, seconds, warmupSeconds: 0 });
    measuring = false;
    const collections = lines.filter((l) => /\bgc=(s|ms|mc|mmc)\b/.test(l));
    if (process.env.BENCH_GC_TRACE) fs.writeFileSync(process.env.BENCH_GC_TRACE, collections.join('\n'));
    const pauses = collections.map((l) => field(l, 'pause')).sort((a, b) => a - b);
    const sum = (name: string) => collections.reduce((total, l) => total + field(l, name), 0);
    console.log(
      JSON.stringify({
        database: scratch ? 'postgresql' : 'pglite',
        rate,
        seconds,
        answered: run.ok,
        open_loop: { p50_ms: run.p50_ms, p99_ms: run.p99_ms },
        collections: collections.length,
        scavenges: collections.filter((l) => /\bgc=s\b/.test(l)).length,
        pause_ms: {
          median: pauses[Math.floor(pauses.length / 2)] ?? 0,
          largest: pauses.at(-1) ?? 0,
          total: Math.round(pauses.reduce((a, b) => a + b, 0)),
        },
        allocated_kib_per_request: +(sum('allocated') / 1024 / run.ok).toFixed(1),
        promoted_mib: +(sum('promoted') / 1024 / 1024).toFixed(1),
      }),
    );
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
    await scratch?.drop();
  }
}

await main();
