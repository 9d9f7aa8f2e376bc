// The phases of the ingestion benchmark (ingest.ts): single events against the bare baseline
// (repeated while the baseline shows a busy machine), batches, open-loop latency, and Tally's
// resident memory after a number of single events. Each takes the URLs it loads and returns figures.
import fs from 'node:fs';
import { type OpenLoopResult, openLoop } from './open-loop.js';
import { runWrk, type WrkResult } from './wrk.js';

export const CONNECTIONS = 32;
export const BATCH_CONNECTIONS = 8;
export const BATCH_SIZE = 100;
/** Under this, the bare server shows a machine too busy for the run to mean much: it is repeated. */
export const MIN_BASELINE = 10_000;
const ATTEMPTS = 3;

export interface Target {
  url: string;
  headers?: Record<string, string>;
}

const log = (line: string) => process.stderr.write(`${line}\n`);

/** wrk for 1 s (left out), then for `seconds`. */
async function measured(target: Target, body: string, connections: number, seconds: number): Promise<WrkResult> {
  const load = { url: target.url, body, headers: target.headers, connections };
  await runWrk({ ...load, seconds: 1 });
  return runWrk({ ...load, seconds });
}

/**
 * `POST /v1/events` with wrk, 32 connections, against the bare server and then Tally, side by side.
 * While the baseline stays under 10,000 req/s the pair is measured again, up to three times.
 */
export async function singleEvents(bare: Target, tally: Target, body: string, seconds: number) {
  const baselines: number[] = [];
  for (let attempt = 1; ; attempt++) {
    const baseline = await measured(bare, body, CONNECTIONS, seconds);
    const events = await measured(tally, body, CONNECTIONS, seconds);
    baselines.push(Math.round(baseline.perSecond));
    const last = attempt === ATTEMPTS;
    if (baseline.perSecond >= MIN_BASELINE || last) {
      if (baseline.perSecond < MIN_BASELINE) log(`baseline still under ${MIN_BASELINE} req/s after ${attempt} runs`);
      return { baseline, events, attempts: attempt, baselines };
    }
    log(
      `baseline ${Math.round(baseline.perSecond)} req/s is under ${MIN_BASELINE}: the machine is busy; ` +
        `repeating the single-event run (${attempt + 1} of ${ATTEMPTS})`,
    );
  }
}

/** `POST /v1/events/batch`, 100 events a request, 8 connections. */
export function batches(tally: Target, body: string, seconds: number): Promise<WrkResult> {
  return measured(tally, body, BATCH_CONNECTIONS, seconds);
}

/**
 * Open-loop latency at `rate`: against the bare server first (the generator keeps the schedule and
 * this is its own floor), then against Tally.
 */
export async function latency(
  bare: Target,
  tally: Target,
  body: string,
  rate: number,
  seconds: number,
): Promise<{ bare: OpenLoopResult; tally: OpenLoopResult }> {
  const run = (t: Target) => openLoop({ url: t.url, headers: t.headers, body, rate, seconds, warmupSeconds: 1 });
  return { bare: await run(bare), tally: await run(tally) };
}

/** Resident memory of a process in MiB (VmRSS) and its peak (VmHWM). */
export function memoryOf(pid: number): { rss_mib: number; peak_mib: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rss_mib: Math.round(kb('VmRSS') / 1024), peak_mib: Math.round(kb('VmHWM') / 1024) };
}

export interface MemorySample {
  events: number;
  rss_mib: number;
  peak_mib: number;
  /** Requests a second while getting there (wrk, 32 connections, as fast as Tally answers). */
  req_per_s: number;
}

/**
 * Sends events with wrk until Tally has answered each checkpoint's number of them with 200 (counted
 * from this call; `perRequest` events a request, 1 for single events), and reads its memory 1 s
 * after each.
 */
export async function memoryCheckpoints(
  tally: Target,
  pid: number,
  body: string,
  checkpoints: number[],
  perRequest = 1,
): Promise<MemorySample[]> {
  const samples: MemorySample[] = [];
  let sent = 0;
  for (const n of checkpoints) {
    const requests = Math.ceil((n - sent) / perRequest);
    // An upper bound only (wrk stops at `requests`): 100 requests a second at least, plus a minute.
    const seconds = Math.ceil(requests / 100) + 60;
    const load = await runWrk({ ...tally, body, connections: CONNECTIONS, seconds, stopAfter: requests });
    const errors = load.non2xx + load.socketErrors;
    if (errors > 0 || load.requests < requests) {
      log(`memory phase: ${load.requests} answers (${errors} errors) of the ${requests} wanted on the way to ${n}`);
    }
    sent = n;
    await new Promise((r) => setTimeout(r, 1000));
    samples.push({ events: n, ...memoryOf(pid), req_per_s: Math.round(load.perSecond) });
    log(`memory: ${JSON.stringify(samples.at(-1))}`);
  }
  return samples;
}
