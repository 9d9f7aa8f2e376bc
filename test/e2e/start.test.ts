// The real start-up, as `npm start` runs it: first start on an empty data directory prints and
// saves the keys (mode 0600), they work, and a killed server's lock file does not block the next start.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-start-'));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

async function start(port: number): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      ADMIN_TOKEN: '',
      DATABASE_URL: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
  });
  child.stderr!.on('data', (d) => {
    out += d;
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok) return { child, output: () => out };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`server did not start:\n${out}`);
}

describe('npm start on the embedded database', () => {
  it('bootstraps keys on first start, and a kill -9 leaves no lock that blocks the next start', async () => {
    const port = await freePort();
    const first = await start(port);
    const file = path.join(dataDir, 'credentials.json');
    const creds = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(creds).toEqual({
      admin_token: expect.stringMatching(/^tk_admin_/),
      organization_id: expect.any(String),
      app_id: expect.any(String),
      api_key: expect.stringMatching(/^tk_live_/),
      mcp_api_key: expect.stringMatching(/^tk_mcp_/),
    });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    // The server prints the keys as it starts listening, but its output pipe and the /healthz
    // answer reach this process separately: the answer may be read first.
    await expect.poll(() => first.output(), { timeout: 30_000, interval: 100 }).toContain(creds.api_key);
    expect(first.output()).toContain(creds.mcp_api_key);

    const res = await fetch(`http://127.0.0.1:${port}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ event_name: 'started', user_id: 'u-1' }),
    });
    expect(res.status).toBe(200);

    // A second server on the same directory is refused while the first is alive.
    const second = spawn(process.execPath, ['--import', 'tsx', 'server/src/main.ts'], {
      cwd: root,
      env: { ...process.env, PORT: String(await freePort()), DATA_DIR: dataDir, DATABASE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(second);
    let secondErr = '';
    second.stderr!.on('data', (d) => {
      secondErr += d;
    });
    const code = await new Promise((r) => second.on('exit', r));
    expect(code).toBe(1);
    expect(secondErr).toContain('in use by process');

    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.on('exit', r));
    expect(fs.existsSync(path.join(dataDir, 'tally.lock'))).toBe(true);

    const again = await start(port);
    expect(again.output()).not.toContain(creds.api_key); // keys are printed once only
    const stillThere = await fetch(`http://127.0.0.1:${port}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${creds.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ event_name: 'restarted', user_id: 'u-1' }),
    });
    expect(stillThere.status).toBe(200);
    again.child.kill('SIGTERM');
    expect(await new Promise((r) => again.child.on('exit', r))).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'tally.lock'))).toBe(false);
  }, 120_000);
});
