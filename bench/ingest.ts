// Ingestion benchmark (issue 32), with wrk as the load generator so that the server, not the
// client, is the bottleneck. Side by side in one run, on one database (embedded, or a scratch
// PostgreSQL database): Tally's resident memory after 100,000 single events; POST /v1/events (wrk,
// 32 connections) against a bare node:http JSON endpoint as the baseline; POST /v1/events/batch
// (100 events a request, 8 connections) against COPY of the same rows into a table of the same
// shape (copy.ts); and open-loop latency (open-loop.ts) at half Tally's measured maximum, against
// the bare server and Tally. `benchIngestMemory` (opt-in) follows memory up to 1,000,000 events.
// Tally runs as `npm start` runs it (the compiled server, built first when stale; tsx when it cannot
// be built), in its own process, with RATE_LIMITS=off.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { copyEmbedded, copyPostgres } from './copy.js';
import {
  BATCH_SIZE,
  batches,
  latency,
  type MemorySample,
  MIN_BASELINE,
  memoryCheckpoints,
  singleEvents,
  type Target,
} from './ingest-phases.js';
import { ensureWrk } from './wrk.js';

const root = path.resolve(import.meta.dirname, '..');

export async function bareServer(): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const parsed = JSON.parse(body) as { event_name?: string };
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ success: true, event_name: parsed.event_name ?? null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/** A fresh, uniquely named database on the PostgreSQL server of `adminUrl`; dropped by the returned function. */
export async function scratchDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const { default: knex } = await import('knex');
  const admin = knex({ client: 'pg', connection: adminUrl, pool: { min: 0, max: 1 } });
  const name = `tally_bench_${Date.now()}`;
  await admin.raw(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.destroy();
    },
  };
}

/**
 * Whether the compiled server can run: builds it first (saying so) when it is missing or older than
 * the sources, as `npm start` does; false, with a note, when that fails (then run it with tsx).
 */
export async function compiledServer(): Promise<boolean> {
  const state = pathToFileURL(path.join(root, 'server/bin/build-state.mjs')).href;
  const { buildStatus } = (await import(state)) as { buildStatus(): 'fresh' | 'stale' | 'missing' };
  const status = buildStatus();
  if (status === 'fresh') return true;
  const why = status === 'missing' ? 'missing' : 'older than the sources';
  process.stderr.write(`The compiled server is ${why}: building it first (npm run build).\n`);
  try {
    execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { cwd: root, stdio: ['ignore', 2, 2] });
    return true;
  } catch {
    process.stderr.write('The build failed: running the server from its sources with tsx instead.\n');
    return false;
  }
}

export type TallyProcess = Awaited<ReturnType<typeof tally>>;

/**
 * Starts Tally in its own process on a fresh data directory (and `databaseUrl` when given).
 * `options.root` runs another checkout, `options.env` adds settings, `options.onLine` reads its log,
 * `options.compiled` runs server/dist/main.js as `npm start` does (else the sources with tsx).
 */
export async function tally(
  databaseUrl?: string,
  options: {
    root?: string;
    env?: Record<string, string>;
    onLine?: (line: string) => void;
    compiled?: boolean;
    /** Options for node itself (`--cpu-prof`), before the script. */
    nodeArgs?: string[];
  } = {},
): Promise<{ url: string; apiKey: string; appId: string; adminToken: string; child: ChildProcess; dataDir: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-'));
  // A port below Linux's ephemeral range (32768 and up), where wrk's and the open-loop generator's
  // own connections never sit; taken anyway (another bench), the start is tried again on another.
  for (let attempt = 1; ; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const started = await startTally(port, dataDir, databaseUrl, options);
    if (started) return started;
    if (attempt === 5) throw new Error('Tally did not start in 5 tries (see its log above)');
  }
}

/** One start of Tally on `port`: its handles once /readyz answers, or undefined when it exits first. */
async function startTally(
  port: number,
  dataDir: string,
  databaseUrl: string | undefined,
  options: Parameters<typeof tally>[1] & {},
): Promise<TallyProcess | undefined> {
  const args = [
    ...(options.nodeArgs ?? []),
    ...(options.compiled ? ['--enable-source-maps', 'server/dist/main.js'] : ['--import', 'tsx', 'server/src/main.ts']),
  ];
  const child = spawn(process.execPath, args, {
    cwd: options.root ?? root,
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      RATE_LIMITS: 'off',
      LOG_LEVEL: 'warn',
      DATABASE_URL: databaseUrl ?? '',
      ...options.env,
    },
    stdio: ['ignore', options.onLine ? 'pipe' : 'ignore', 'inherit'],
  });
  if (options.onLine) {
    let tail = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (tail + chunk.toString()).split('\n');
      tail = lines.pop() ?? '';
      for (const line of lines) options.onLine!(line);
    });
  }
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null || child.signalCode !== null) return undefined;
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      // starting
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const creds = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
  return { url, apiKey: creds.api_key, appId: creds.app_id, adminToken: creds.admin_token, child, dataDir };
}

export function event(i: number) {
  return { event_name: i % 3 ? 'view' : 'purchase', user_id: `bench-${i % 1000}`, properties: { i, price: 9.99 } };
}

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** The first memory checkpoint (BENCH_MEMORY_FIRST to shorten a trial run). */
const MEMORY_FIRST = Number(process.env.BENCH_MEMORY_FIRST ?? 100_000);
/** Goals of issue 32: open-loop p99 at half the maximum, and memory growth from 100k to 1M events. */
const P99_GOAL_MS = 20;
const MEMORY_GROWTH_GOAL = 1.1;

const batchBody = () => JSON.stringify({ events: Array.from({ length: BATCH_SIZE }, (_, i) => event(i)) });
const ratio = (a: number, b: number) => +(a / b).toFixed(3);

async function stopTally(server: TallyProcess): Promise<void> {
  if (server.child.exitCode !== null) return;
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.once('exit', r));
}

/** BENCH_TRIGGER_EVENT=name: the app gets a trigger campaign on that event name before the load. */
async function triggerCampaign(server: TallyProcess, trigger: string): Promise<void> {
  const created = await fetch(`${server.url}/admin/v1/apps/${server.appId}/campaigns`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'bench',
      title: 't',
      message: 'm',
      schedule_type: 'trigger',
      trigger_event_name: trigger,
    }),
  });
  if (!created.ok) throw new Error(`could not create the trigger campaign: ${created.status}`);
}

/**
 * BENCH_ROLLUP=off (PostgreSQL only): the rollups' insert triggers (the activity rollup's and the
 * per-event rollup's) are disabled on the scratch database, to measure what writing their deltas
 * costs ingestion.
 */
export async function withoutRollupDeltas(databaseUrl: string | undefined): Promise<void> {
  if (!databaseUrl)
    throw new Error('BENCH_ROLLUP=off needs BENCH_DATABASE_URL (the embedded database is locked by the server)');
  const { default: knex } = await import('knex');
  const db = knex({ client: 'pg', connection: databaseUrl, pool: { min: 0, max: 1 } });
  try {
    await db.raw('alter table events disable trigger events_rollup_inserted');
    await db.raw('alter table events disable trigger events_slots_inserted');
    await db.raw('alter table events disable trigger events_properties_inserted');
  } finally {
    await db.destroy();
  }
}

/** A fresh Tally on a fresh database (scratch PostgreSQL database, or a new data directory), and its cleanup. */
async function freshTally(adminDatabaseUrl?: string) {
  const compiled = await compiledServer();
  const scratch = adminDatabaseUrl ? await scratchDatabase(adminDatabaseUrl) : undefined;
  const server = await tally(scratch?.url, { compiled });
  const auth = { authorization: `Bearer ${server.apiKey}` };
  const cleanup = async () => {
    await stopTally(server);
    fs.rmSync(server.dataDir, { recursive: true, force: true });
    await scratch?.drop();
  };
  return {
    server,
    compiled,
    databaseUrl: scratch?.url,
    events: { url: `${server.url}/v1/events`, headers: auth } as Target,
    batch: { url: `${server.url}/v1/events/batch`, headers: auth } as Target,
    cleanup,
  };
}

/** Every figure of one database's run, side by side with its baseline. */
async function measureAll(t: Awaited<ReturnType<typeof freshTally>>, bare: Target) {
  const single = JSON.stringify(event(1));
  const [memory] = await memoryCheckpoints(t.events, t.server.child.pid!, single, [MEMORY_FIRST]);
  const singles = await singleEvents(bare, t.events, single, SECONDS);
  const batch = await batches(t.batch, batchBody(), SECONDS);
  const rate = Math.max(1, Math.round(singles.events.perSecond / 2));
  const open = await latency(bare, t.events, single, rate, SECONDS);
  await stopTally(t.server);
  const copy = t.databaseUrl
    ? await copyPostgres(t.databaseUrl, SECONDS)
    : await copyEmbedded(t.server.dataDir, SECONDS);
  return { memory: memory!, singles, batch, rate, open, copy };
}

export async function benchIngest(label: string, adminDatabaseUrl?: string) {
  ensureWrk();
  const t = await freshTally(adminDatabaseUrl);
  const bare = await bareServer();
  try {
    const trigger = process.env.BENCH_TRIGGER_EVENT;
    if (trigger) await triggerCampaign(t.server, trigger);
    const withoutRollup = process.env.BENCH_ROLLUP === 'off';
    if (withoutRollup) await withoutRollupDeltas(t.databaseUrl);
    const { memory, singles, batch, rate, open, copy } = await measureAll(t, { url: `${bare.url}/` });
    const batchPerSecond = batch.perSecond * BATCH_SIZE;
    return {
      label: `${label}${trigger ? `, trigger campaign on ${trigger}` : ''}${withoutRollup ? ', without the rollup deltas' : ''}`,
      server: t.compiled ? 'compiled (server/dist/main.js)' : 'tsx (server/src/main.ts)',
      seconds: SECONDS,
      single: {
        baseline_req_per_s: Math.round(singles.baseline.perSecond),
        tally_req_per_s: Math.round(singles.events.perSecond),
        ratio: ratio(singles.events.perSecond, singles.baseline.perSecond),
        tally_errors: singles.events.non2xx + singles.events.socketErrors,
        runs: singles.attempts,
        ...(singles.attempts > 1 && {
          repeated: `baseline under ${MIN_BASELINE} req/s, run ${singles.attempts} times: ${singles.baselines.join(', ')}`,
        }),
      },
      batch: {
        copy_rows_per_s: Math.round(copy.perSecond),
        tally_events_per_s: Math.round(batchPerSecond),
        ratio: ratio(batchPerSecond, copy.perSecond),
        tally_errors: batch.non2xx + batch.socketErrors,
      },
      open_loop: {
        target_per_s: rate,
        bare: open.bare,
        tally: open.tally,
        p99_goal_ms: P99_GOAL_MS,
      },
      memory: { after_100k: memory },
    };
  } finally {
    bare.close();
    await t.cleanup();
  }
}

/**
 * `npm run bench -- ingest-memory`: Tally's resident memory every 100,000 single events up to
 * BENCH_MEMORY_EVENTS (1,000,000), and the growth from the first checkpoint to the last.
 * BENCH_MEMORY_BATCHES=1 sends them in batches of 100 instead (a million in minutes, not tens of them).
 */
export async function benchIngestMemory(label: string, adminDatabaseUrl?: string) {
  ensureWrk();
  const total = Number(process.env.BENCH_MEMORY_EVENTS ?? 1_000_000);
  const step = Math.min(MEMORY_FIRST, total);
  const t = await freshTally(adminDatabaseUrl);
  try {
    const checkpoints = Array.from({ length: Math.ceil(total / step) }, (_, i) => Math.min(total, (i + 1) * step));
    const batched = process.env.BENCH_MEMORY_BATCHES === '1';
    const samples: MemorySample[] = batched
      ? await memoryCheckpoints(t.batch, t.server.child.pid!, batchBody(), checkpoints, BATCH_SIZE)
      : await memoryCheckpoints(t.events, t.server.child.pid!, JSON.stringify(event(1)), checkpoints);
    const first = samples[0]!;
    const last = samples.at(-1)!;
    return {
      label,
      bench: 'ingest-memory',
      sent_as: batched ? `batches of ${BATCH_SIZE}` : 'single events',
      server: t.compiled ? 'compiled (server/dist/main.js)' : 'tsx (server/src/main.ts)',
      rss_ratio: ratio(last.rss_mib, first.rss_mib),
      rss_ratio_goal: MEMORY_GROWTH_GOAL,
      samples,
    };
  } finally {
    await t.cleanup();
  }
}
