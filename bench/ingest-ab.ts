// A/B of server settings under the ingestion benchmark's loads, side by side in one run: for each
// round, each setting gets a fresh Tally (scratch PostgreSQL database with BENCH_DATABASE_URL, else
// the embedded database) and wrk's single events (32 connections) then batches of 100
// (8 connections), BENCH_SECONDS each after 1 s of warm-up; the bare server's single events are
// measured in every round too, so each figure has its baseline of the same minute.
// BENCH_AB_RATE adds single events at that fixed rate (open loop, bench/open-loop.ts) and their p99.
// `npx tsx bench/ingest-ab.ts '{"A":{"INGEST_GROUPS_IN_FLIGHT":"4"},"B":{"INGEST_GROUPS_IN_FLIGHT":"2"}}' [rounds]`;
// a setting's `ROOT` runs the compiled server of another checkout (built there first), e.g. a
// git worktree of the commit before a change: `{"before":{"ROOT":"/path/to/worktree"},"after":{}}`;
// `"ROLLUP":"off"` (PostgreSQL only) disables the rollups' delta triggers: `{"without":{"ROLLUP":"off"},"with":{}}`.
import { bareServer, compiledServer, event, scratchDatabase, tally, withoutRollupDeltas } from './ingest.js';
import { BATCH_CONNECTIONS, BATCH_SIZE, CONNECTIONS } from './ingest-phases.js';
import { openLoop } from './open-loop.js';
import { ensureWrk, runWrk } from './wrk.js';

const settings = JSON.parse(process.argv[2] ?? '{}') as Record<string, Record<string, string>>;
const rounds = Number(process.argv[3] ?? 2);
const seconds = Number(process.env.BENCH_SECONDS ?? 6);
/** BENCH_AB_RATE: also single events on this fixed schedule (open loop), for their p99. */
const openRate = Number(process.env.BENCH_AB_RATE ?? 0);
const single = JSON.stringify(event(1));
const batch = JSON.stringify({ events: Array.from({ length: BATCH_SIZE }, (_, i) => event(i)) });

async function measure({ ROOT: root, ROLLUP: rollup, ...env }: Record<string, string>) {
  const scratch = process.env.BENCH_DATABASE_URL ? await scratchDatabase(process.env.BENCH_DATABASE_URL) : undefined;
  const compiled = root ? true : await compiledServer();
  const server = await tally(scratch?.url, { compiled, env, ...(root ? { root } : {}) });
  try {
    // `"ROLLUP":"off"` (PostgreSQL): the rollups' insert triggers disabled, to measure what their deltas cost.
    if (rollup === 'off') await withoutRollupDeltas(scratch?.url);
    const headers = { authorization: `Bearer ${server.apiKey}` };
    const load = (url: string, body: string, connections: number, s: number) =>
      runWrk({ url, body, headers, connections, seconds: s });
    await load(`${server.url}/v1/events`, single, CONNECTIONS, 1);
    const s = await load(`${server.url}/v1/events`, single, CONNECTIONS, seconds);
    await load(`${server.url}/v1/events/batch`, batch, BATCH_CONNECTIONS, 1);
    const b = await load(`${server.url}/v1/events/batch`, batch, BATCH_CONNECTIONS, seconds);
    const open = openRate
      ? await openLoop({
          url: `${server.url}/v1/events`,
          headers,
          body: single,
          rate: openRate,
          seconds,
          warmupSeconds: 1,
        })
      : undefined;
    return {
      ...(open && {
        open_loop: { rate: openRate, achieved: open.achieved_per_s, p50_ms: open.p50_ms, p99_ms: open.p99_ms },
      }),
      single_req_per_s: Math.round(s.perSecond),
      single_p99_ms: s.p99Ms,
      batch_events_per_s: Math.round(b.perSecond * BATCH_SIZE),
      errors: s.non2xx + s.socketErrors + b.non2xx + b.socketErrors,
    };
  } finally {
    server.child.kill('SIGTERM');
    await new Promise((r) => server.child.once('exit', r));
    await scratch?.drop();
  }
}

ensureWrk();
const bare = await bareServer();
try {
  for (let round = 1; round <= rounds; round++) {
    const base = await runWrk({ url: `${bare.url}/`, body: single, connections: CONNECTIONS, seconds });
    const row: Record<string, unknown> = { round, bare_req_per_s: Math.round(base.perSecond) };
    for (const [name, env] of Object.entries(settings)) {
      const m = await measure(env);
      row[name] = { ...m, single_ratio: +(m.single_req_per_s / base.perSecond).toFixed(3) };
    }
    console.log(JSON.stringify(row));
  }
} finally {
  bare.close();
}
