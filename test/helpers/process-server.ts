// Tally in its own OS process, as `npm start` runs it: for tests that need a second instance
// on the same PostgreSQL database (sessions, exactly-once sends) or a process to kill.
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

export interface ServerProcess {
  url: string;
  child: ChildProcess;
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts a server process with `env` (DATABASE_URL, ADMIN_TOKEN, ...) and waits until it answers.
 * The port is found free first, and another process of the run may take it before this one binds
 * it: a start that fails with EADDRINUSE is tried again on another port.
 */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(env);
    } catch (err) {
      if (attempt >= 3 || !String((err as Error).message).includes('EADDRINUSE')) throw err;
    }
  }
}

async function startOnce(env: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      RATE_LIMITS: 'off',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      // the campaign tests' server alone works campaign jobs on a shared database (test/helpers/server.ts)
      CAMPAIGN_WORKERS: 'off',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  const url = `http://127.0.0.1:${port}`;
  // Listened for from the start, so a process that exits on its own is never waited for in vain.
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await exited;
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited early:\n${out}`);
    try {
      const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5_000) });
      if (health.ok) return { url, child, output: () => out, stop };
    } catch {
      // not listening yet, or not answering within 5 s
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  await stop('SIGKILL');
  throw new Error(`server did not start:\n${out}`);
}
