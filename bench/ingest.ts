// Ingestion benchmark: POST /v1/events at concurrency 32 and /v1/events/batch with 100 events a
// request, against a bare node:http JSON endpoint measured in the same run as the baseline.
// The server runs in its own process with RATE_LIMITS=off; results are ratios to the baseline.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { runLoad } from './load.js';

const root = path.resolve(import.meta.dirname, '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = 32;

async function bareServer(): Promise<{ url: string; close(): void }> {
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
 * Starts Tally in its own process on a fresh data directory (and `databaseUrl` when given).
 * `options.root` runs another checkout, `options.env` adds settings, `options.onLine` reads its log.
 */
export async function tally(
  databaseUrl?: string,
  options: { root?: string; env?: Record<string, string>; onLine?: (line: string) => void } = {},
): Promise<{ url: string; apiKey: string; appId: string; adminToken: string; child: ChildProcess; dataDir: string }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-bench-'));
  const port = 30000 + Math.floor(Math.random() * 20000);
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
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

export async function benchIngest(label: string, adminDatabaseUrl?: string) {
  const scratch = adminDatabaseUrl ? await scratchDatabase(adminDatabaseUrl) : undefined;
  const databaseUrl = scratch?.url;
  const bare = await bareServer();
  const single = JSON.stringify(event(1));
  const baseline = await runLoad({ url: `${bare.url}/`, body: single, concurrency: CONCURRENCY, seconds: SECONDS });
  bare.close();

  const server = await tally(databaseUrl);
  const auth = { authorization: `Bearer ${server.apiKey}` };
  // BENCH_TRIGGER_EVENT=name: the app has a trigger campaign on that event name first, so every
  // ingestion transaction also runs the trigger outbox statement (and `purchase` fires it).
  const trigger = process.env.BENCH_TRIGGER_EVENT;
  if (trigger) {
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
  const events = await runLoad({
    url: `${server.url}/v1/events`,
    body: single,
    headers: auth,
    concurrency: CONCURRENCY,
    seconds: SECONDS,
  });
  const batchBody = JSON.stringify({ events: Array.from({ length: 100 }, (_, i) => event(i)) });
  const batch = await runLoad({
    url: `${server.url}/v1/events/batch`,
    body: batchBody,
    headers: auth,
    concurrency: 8,
    seconds: SECONDS,
  });
  server.child.kill('SIGTERM');
  await new Promise((r) => server.child.on('exit', r));
  fs.rmSync(server.dataDir, { recursive: true, force: true });
  await scratch?.drop();

  return {
    label: trigger ? `${label}, trigger campaign on ${trigger}` : label,
    baseline_req_per_s: Math.round(baseline.perSecond),
    events_req_per_s: Math.round(events.perSecond),
    events_ratio_to_baseline: +(events.perSecond / baseline.perSecond).toFixed(3),
    events_errors: events.errors,
    batch_events_per_s: Math.round(batch.perSecond * 100),
    batch_ratio_to_baseline: +((batch.perSecond * 100) / baseline.perSecond).toFixed(3),
    batch_errors: batch.errors,
  };
}
