// A CPU profile of Tally under the ingestion benchmark's single-event load: the compiled server
// started with --cpu-prof, wrk for BENCH_SECONDS, then the profile's heaviest functions (self time)
// and the share of time the main thread was idle. `npx tsx bench/profile-ingest.ts [single|batch]`;
// BENCH_DATABASE_URL for PostgreSQL (a scratch database), else the embedded database.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { compiledServer, event, scratchDatabase, tally } from './ingest.js';
import { BATCH_SIZE } from './ingest-phases.js';
import { ensureWrk, runWrk } from './wrk.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** Self time by function within [from, to] (µs on the monotonic clock the profile uses). */
function summarize(file: string, from: number, to: number, top = 45): void {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
  };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let at = profile.startTime;
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = profile.timeDeltas[i] ?? 0;
    at += dt;
    if (at < from || at > to) return;
    total += dt;
    self.set(id, (self.get(id) ?? 0) + dt);
  });
  console.log(`window ${((to - from) / 1e6).toFixed(1)} s, sampled ${(total / 1e6).toFixed(1)} s`);
  // The window alone, for tools that read whole profiles (Chrome's DevTools, speedscope).
  const kept = { samples: [] as number[], timeDeltas: [] as number[] };
  let t = profile.startTime;
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0;
    if (t >= from && t <= to) {
      kept.samples.push(id);
      kept.timeDeltas.push(profile.timeDeltas[i] ?? 0);
    }
  });
  fs.writeFileSync(file.replace(/\.cpuprofile$/, '.window.cpuprofile'), JSON.stringify({ ...profile, ...kept }));
  const byFn = new Map<string, number>();
  for (const [id, t] of self) {
    const f = byId.get(id)!.callFrame;
    const where = f.url ? `${f.url.replace(/^.*\/(node_modules|server)\//, '$1/')}:${f.lineNumber + 1}` : '';
    const key = `${f.functionName || '(anonymous)'} ${where}`;
    byFn.set(key, (byFn.get(key) ?? 0) + t);
  }
  const rows = [...byFn].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [k, t] of rows) console.log(`${((100 * t) / total).toFixed(1).padStart(5)} %  ${k}`);
  // Per package (node_modules/<name>) and ours.
  const byPkg = new Map<string, number>();
  for (const [id, t] of self) {
    const url = byId.get(id)!.callFrame.url;
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
    const key = m
      ? m[1]!
      : url.includes('/server/')
        ? 'tally'
        : url
          ? 'node internals'
          : byId.get(id)!.callFrame.functionName;
    byPkg.set(key, (byPkg.get(key) ?? 0) + t);
  }
  console.log('--- by package');
  for (const [k, t] of [...byPkg].sort((a, b) => b[1] - a[1]).slice(0, 20))
    console.log(`${((100 * t) / total).toFixed(1).padStart(5)} %  ${k}`);
}

async function main() {
  ensureWrk();
  const kind = process.argv[2] ?? 'single';
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-prof-'));
  const scratch = process.env.BENCH_DATABASE_URL ? await scratchDatabase(process.env.BENCH_DATABASE_URL) : undefined;
  const compiled = await compiledServer();
  const server = await tally(scratch?.url, {
    compiled,
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
    env: process.env.PROFILE_ENV ? JSON.parse(process.env.PROFILE_ENV) : {},
  });
  const batch = kind === 'batch';
  const load = {
    url: `${server.url}/v1/events${batch ? '/batch' : ''}`,
    body: batch
      ? JSON.stringify({ events: Array.from({ length: BATCH_SIZE }, (_, i) => event(i)) })
      : JSON.stringify(event(1)),
    headers: { authorization: `Bearer ${server.apiKey}` },
    connections: batch ? 8 : 32,
  };
  if (process.env.PROFILE_SINGLES_FIRST) {
    // The state the benchmark's batch phase meets: many single events of one user before it.
    await runWrk({
      ...load,
      url: `${server.url}/v1/events`,
      body: JSON.stringify(event(1)),
      connections: 32,
      seconds: Number(process.env.PROFILE_SINGLES_FIRST),
    });
  }
  await runWrk({ ...load, seconds: 2 });
  const from = Number(process.hrtime.bigint() / 1000n);
  const result = await runWrk({ ...load, seconds });
  const to = Number(process.hrtime.bigint() / 1000n);
  console.log(JSON.stringify(result));
  const metrics = await (
    await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${server.adminToken}` } })
  ).text();
  for (const line of metrics.split('\n'))
    if (/^tally_ingest_(batch_events|commit_duration_seconds)_(sum|count)/.test(line)) console.log(line);
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));
  if (process.env.PROFILE_KEEP_DB) console.log(`kept database: ${scratch?.url}`);
  else await scratch?.drop();
  const file = fs.readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no profile written');
  summarize(path.join(dir, file), from, to);
  console.log(
    `requests per second ${result.perSecond.toFixed(0)}: ${(1e6 / result.perSecond).toFixed(0)} µs of wall time each`,
  );
  console.log(`profile: ${path.join(dir, file)}`);
}

await main();
