// wrk (Debian's package) as the closed-loop load generator of the ingestion benchmark: a C client
// on one thread that drives far more requests a second than a Node client on these machines, so the
// server, not the generator, sets the pace. A Lua script sets the POST body and headers; another
// part of it prints wrk's summary in one line that this module reads. With `stopAfter`, the script
// counts 200 answers and tells this module when it has them all, which then stops wrk (SIGINT).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface WrkResult {
  /** Requests answered (any status). */
  requests: number;
  seconds: number;
  perSecond: number;
  /** Answers with a status of 400 and above. */
  non2xx: number;
  /** Connection, read and write errors and time-outs. */
  socketErrors: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Installs wrk with apt-get when it is missing, and says so on stderr. */
export function ensureWrk(): void {
  if (spawnSync('sh', ['-c', 'command -v wrk']).status === 0) return;
  process.stderr.write('wrk is not installed: installing it with `apt-get install -y wrk`\n');
  const install = () => spawnSync('apt-get', ['install', '-y', 'wrk'], { stdio: ['ignore', 2, 2] }).status === 0;
  if (install()) return;
  process.stderr.write('apt-get install failed: running `apt-get update` and trying again\n');
  spawnSync('apt-get', ['update'], { stdio: ['ignore', 2, 2] });
  if (!install()) throw new Error('could not install wrk; install it with `apt-get install -y wrk` and run again');
}

function luaScript(body: string, headers: Record<string, string>, stopAfter?: number): string {
  if (body.includes(']==]')) throw new Error('the body cannot be quoted for Lua');
  const lines = [
    'wrk.method = "POST"',
    `wrk.body = [==[${body}]==]`,
    'wrk.headers["Content-Type"] = "application/json"',
    ...Object.entries(headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`),
  ];
  if (stopAfter !== undefined) {
    // Only defined when needed: a response() function makes wrk hand every answer to Lua.
    lines.push(
      'local ok = 0',
      'function response(status, headers, body)',
      '  if status == 200 then ok = ok + 1 end',
      `  if ok == ${stopAfter} then io.stdout:write("STOP\\n"); io.stdout:flush(); wrk.thread:stop() end`,
      'end',
    );
  }
  lines.push(
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("RESULT %d %d %d %d %d %d %d\\n", summary.duration, summary.requests,',
    '    e.connect + e.read + e.write + e.timeout, e.status,',
    '    latency:percentile(50), latency:percentile(99), latency.max))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

/**
 * Runs wrk on one thread with `connections` keep-alive connections, for `seconds`, or until
 * `stopAfter` requests were answered 200 (then `seconds` is only an upper bound).
 */
export async function runWrk(options: {
  url: string;
  body: string;
  headers?: Record<string, string>;
  connections: number;
  seconds: number;
  stopAfter?: number;
}): Promise<WrkResult> {
  const target = new URL(options.url);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(target.hostname)) throw new Error('load goes to loopback only');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-wrk-'));
  const script = path.join(dir, 'post.lua');
  fs.writeFileSync(script, luaScript(options.body, options.headers ?? {}, options.stopAfter));
  const args = ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--timeout', '10s', '-s', script];
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn('wrk', [...args, options.url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    p.stdout.on('data', (c: Buffer) => {
      text += c.toString();
      if (options.stopAfter !== undefined && /^STOP$/m.test(text)) p.kill('SIGINT');
    });
    p.on('error', reject);
    p.on('exit', () => resolve(text));
  });
  fs.rmSync(dir, { recursive: true, force: true });
  const m = /RESULT (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(out);
  if (!m) throw new Error(`wrk gave no result:\n${out}`);
  const [duration, requests, socketErrors, non2xx, p50, p99, max] = m.slice(1).map(Number) as number[];
  const seconds = duration! / 1e6;
  const ms = (us: number) => Math.round(us / 100) / 10;
  return {
    requests: requests!,
    seconds,
    perSecond: requests! / seconds,
    non2xx: non2xx!,
    socketErrors: socketErrors!,
    p50Ms: ms(p50!),
    p99Ms: ms(p99!),
    maxMs: ms(max!),
  };
}
