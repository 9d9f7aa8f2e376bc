// An open-loop load generator (in the manner of wrk2): it sends POST requests on a fixed schedule,
// request i at start + i/rate, whatever the server does, over as many keep-alive connections as
// that needs (one request at a time on each; a new connection opens when every open one is busy,
// up to `maxConnections`, after which due requests wait in a queue). Every latency is measured from
// the request's scheduled time, not from when it was sent, so a server (or generator) that falls
// behind is charged for the whole wait of the requests queued behind it (no coordinated omission).
// Raw sockets and a pre-built request keep the generator's own cost small. It runs in its own
// process (`openLoop` spawns this file), so it shares no event loop with the server it measures.
//
//   npx tsx bench/open-loop.ts '{"url":"http://127.0.0.1:8080/","body":"{}","rate":1000,"seconds":10}'
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface OpenLoopOptions {
  url: string;
  body: string;
  headers?: Record<string, string>;
  /** Requests a second. */
  rate: number;
  seconds: number;
  /** Sent on the same schedule first, and left out of every figure. */
  warmupSeconds?: number;
  maxConnections?: number;
  /** Also report the slowest latency of each 250 ms of the schedule (to see whether stalls recur). */
  timeline?: boolean;
}

export interface OpenLoopResult {
  target_per_s: number;
  /** Measured requests answered 2xx, over the time from the first one's schedule to the last answer. */
  achieved_per_s: number;
  sent: number;
  ok: number;
  /** Answers with another status, and requests lost with their connection or never answered. */
  errors: number;
  connections: number;
  p50_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
  /** How late the generator sent requests after their schedule (its own lag, part of the latencies). */
  send_lag_p99_ms: number;
  /** With `timeline`: the slowest answer scheduled in each 250 ms of the measured part, in ms. */
  timeline_max_ms?: number[];
}

const round = (ms: number) => Math.round(ms * 100) / 100;
function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** Length of the first whole HTTP response in `buf` and its status, or null while it is incomplete. */
function parseResponse(buf: Buffer): { length: number; status: number } | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = buf.toString('latin1', 0, end);
  const status = Number(head.slice(9, 12));
  const cl = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (cl) {
    const length = end + 4 + Number(cl[1]);
    return buf.length >= length ? { length, status } : null;
  }
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) {
    const last = buf.indexOf('\r\n0\r\n\r\n', end + 2);
    return last < 0 ? null : { length: last + 7, status };
  }
  return { length: end + 4, status };
}

function requestBytes(target: URL, body: string, headers: Record<string, string>): Buffer {
  const lines = [
    `POST ${target.pathname}${target.search} HTTP/1.1`,
    `Host: ${target.host}`,
    'Content-Type: application/json',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    `Content-Length: ${Buffer.byteLength(body)}`,
  ];
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`);
}

/** The schedule, the connections and the measurements of one run. */
class Run {
  readonly interval: number;
  readonly total: number;
  readonly warm: number;
  readonly start = performance.now() + 100;
  readonly latencies: Float64Array;
  readonly lags: Float64Array;
  /** The latency of each measured request by its place in the schedule (NaN: not answered 2xx). */
  readonly byIndex: Float64Array;
  measured = 0;
  next = 0;
  sent = 0;
  ok = 0;
  errors = 0;
  lastAnswer = 0;
  connections = 0;
  private readonly queue: number[] = [];
  private head = 0;
  private readonly idle: net.Socket[] = [];
  private readonly sockets = new Set<net.Socket>();
  private finished?: () => void;
  private closed = false;

  constructor(
    private readonly o: OpenLoopOptions,
    private readonly target: URL,
    private readonly request: Buffer,
  ) {
    this.interval = 1000 / o.rate;
    this.warm = Math.round(o.rate * (o.warmupSeconds ?? 1));
    this.total = this.warm + Math.round(o.rate * o.seconds);
    this.latencies = new Float64Array(this.total - this.warm);
    this.lags = new Float64Array(this.total);
    this.byIndex = new Float64Array(this.total - this.warm).fill(Number.NaN);
  }

  scheduled(i: number): number {
    return this.start + i * this.interval;
  }

  /** Runs the schedule; resolves when every request is answered or lost, or 10 s after the last was due. */
  run(): Promise<void> {
    const done = new Promise<void>((resolve) => {
      this.finished = resolve;
    });
    setTimeout(() => this.tick(), this.start - performance.now());
    const deadline = this.scheduled(this.total) + 10_000;
    const timer = setTimeout(() => this.finished?.(), deadline - performance.now());
    return done.finally(() => {
      clearTimeout(timer);
      this.closed = true;
      for (const s of this.sockets) s.destroy();
    });
  }

  private tick(): void {
    const now = performance.now();
    while (this.next < this.total && this.scheduled(this.next) <= now) this.queue.push(this.next++);
    this.dispatch();
    if (this.next < this.total) setTimeout(() => this.tick(), Math.max(0, this.scheduled(this.next) - now));
  }

  private dispatch(): void {
    if (this.closed) return;
    while (this.head < this.queue.length) {
      const socket = this.idle.pop() ?? (this.connections < (this.o.maxConnections ?? 512) ? this.open() : undefined);
      if (!socket) return;
      this.send(socket, this.queue[this.head++]!);
    }
    if (this.head > 4096) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  private send(socket: net.Socket, i: number): void {
    (socket as net.Socket & { current?: number }).current = i;
    this.lags[i] = performance.now() - this.scheduled(i);
    this.sent++;
    socket.write(this.request);
  }

  private open(): net.Socket {
    const socket = net.connect({ host: this.target.hostname, port: Number(this.target.port || 80), noDelay: true });
    const state = socket as net.Socket & { current?: number };
    this.connections++;
    this.sockets.add(socket);
    let buf: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
      const response = parseResponse(buf);
      if (!response || state.current === undefined) return;
      buf = buf.subarray(response.length);
      this.answered(state.current, response.status);
      state.current = undefined;
      this.idle.push(socket);
      this.dispatch();
    });
    const lost = () => {
      this.sockets.delete(socket);
      this.connections--;
      const i = this.idle.indexOf(socket);
      if (i >= 0) this.idle.splice(i, 1);
      if (state.current !== undefined) this.answered(state.current, 0);
      state.current = undefined;
      this.dispatch();
    };
    socket.on('error', () => socket.destroy());
    socket.on('close', lost);
    return socket;
  }

  private answered(i: number, status: number): void {
    const now = performance.now();
    if (i >= this.warm) {
      if (status >= 200 && status < 300) {
        this.ok++;
        this.latencies[this.measured++] = now - this.scheduled(i);
        this.byIndex[i - this.warm] = now - this.scheduled(i);
        this.lastAnswer = now;
      } else this.errors++;
    }
    if (this.ok + this.errors === this.total - this.warm && this.next === this.total) this.finished?.();
  }
}

/** Runs the generator in this process (see `openLoop` for a process of its own). */
export async function generate(o: OpenLoopOptions): Promise<OpenLoopResult> {
  const target = new URL(o.url);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) throw new Error('load goes to loopback only');
  const run = new Run(o, target, requestBytes(target, o.body, o.headers ?? {}));
  await run.run();
  const latencies = run.latencies.subarray(0, run.measured).sort();
  const lags = run.lags.subarray(0, run.sent).sort();
  const first = run.scheduled(run.warm);
  const measuredCount = run.total - run.warm;
  return {
    target_per_s: o.rate,
    achieved_per_s: run.ok > 0 ? Math.round((run.ok / (run.lastAnswer - first)) * 1000) : 0,
    sent: run.sent,
    ok: run.ok,
    errors: measuredCount - run.ok,
    connections: run.connections,
    p50_ms: round(percentile(latencies, 0.5)),
    p99_ms: round(percentile(latencies, 0.99)),
    p999_ms: round(percentile(latencies, 0.999)),
    max_ms: round(latencies.length > 0 ? latencies[latencies.length - 1]! : Number.NaN),
    send_lag_p99_ms: round(percentile(lags, 0.99)),
    ...(o.timeline && { timeline_max_ms: timeline(run.byIndex, Math.max(1, Math.round(o.rate / 4))) }),
  };
}

/** The largest value of each `per` consecutive entries. */
function timeline(byIndex: Float64Array, per: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < byIndex.length; i += per) {
    let max = 0;
    for (let k = i; k < Math.min(byIndex.length, i + per); k++) if (byIndex[k]! > max) max = byIndex[k]!;
    out.push(Math.round(max));
  }
  return out;
}

const self = fileURLToPath(import.meta.url);

/** Runs the generator in a process of its own and returns its figures. */
export function openLoop(o: OpenLoopOptions): Promise<OpenLoopResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', self, JSON.stringify(o)], {
      cwd: path.resolve(path.dirname(self), '..'),
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out.trim().split('\n').at(-1)!) as OpenLoopResult);
      else reject(new Error(`the open-loop generator exited with ${code}`));
    });
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === self) {
  const options = JSON.parse(process.argv[2] ?? '{}') as OpenLoopOptions;
  process.stdout.write(`${JSON.stringify(await generate(options))}\n`, () => process.exit(0));
}
