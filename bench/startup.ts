// Start-up time and memory of the compiled server (`npm start`: node server/dist/main.js) against
// the TypeScript sources run through tsx (what `npm start` ran before the production build), in one
// run, alternating, on the embedded database (a fresh data directory: first start with migrations;
// then the same directory again) and on PostgreSQL when BENCH_DATABASE_URL is set.
// Figures: milliseconds from spawn to the first 200 of /healthz, and the server's resident memory
// then (VmRSS) and at its peak (VmHWM), in MiB. Medians of `runs` starts each.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../test/helpers/process-server.js';

const root = path.resolve(import.meta.dirname, '..');
const MODES = {
  compiled: ['--enable-source-maps', 'server/dist/main.js'],
  tsx: ['--import', 'tsx', 'server/src/main.ts'],
} as const;

interface Sample {
  ms: number;
  rssMiB: number;
  peakMiB: number;
}

function memory(pid: number): { rss: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

async function startOnce(mode: keyof typeof MODES, env: Record<string, string>): Promise<Sample> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [...MODES[mode]], {
    cwd: root,
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'warn', PORT: String(port), ...env },
    stdio: 'ignore',
  });
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${mode} server exited with ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`)
        .then((r) => r.ok)
        .catch(() => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const ms = performance.now() - started;
    const { rss, peak } = memory(child.pid!);
    return { ms, rssMiB: rss, peakMiB: peak };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const summary = (samples: Sample[]) => ({
  ms: Math.round(median(samples.map((s) => s.ms))),
  rss_mib: Math.round(median(samples.map((s) => s.rssMiB))),
  peak_mib: Math.round(median(samples.map((s) => s.peakMiB))),
});

export async function benchStartup(databaseUrl?: string, runs = 3) {
  if (!fs.existsSync(path.join(root, 'server/dist/main.js'))) throw new Error('run npm run build first');
  const results: Record<string, Record<string, ReturnType<typeof summary>>> = {};
  const samples: Record<string, Sample[]> = {};
  const add = (key: string, s: Sample) => {
    samples[key] ??= [];
    samples[key].push(s);
  };
  for (let i = 0; i < runs; i++) {
    for (const mode of Object.keys(MODES) as (keyof typeof MODES)[]) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-startup-'));
      add(`${mode}/embedded, first start`, await startOnce(mode, { DATA_DIR: dir }));
      add(`${mode}/embedded, existing data`, await startOnce(mode, { DATA_DIR: dir }));
      fs.rmSync(dir, { recursive: true, force: true });
      if (databaseUrl) add(`${mode}/postgresql`, await startOnce(mode, { DATABASE_URL: databaseUrl }));
    }
  }
  for (const [key, s] of Object.entries(samples)) {
    const [mode, where] = key.split('/') as [string, string];
    results[where] ??= {};
    results[where][mode] = summary(s);
  }
  return { bench: 'startup', runs, results };
}
