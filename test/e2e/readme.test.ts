// The README, word for word, as a new user follows it: the server started as `npm start` starts
// it, with a PORT other than 3000 set only in the server's environment (as in "PORT=4401 npm
// start" in one terminal), then every shell block of the README run in order in a second shell that
// knows nothing of that port, from a fresh folder. Every variable a block uses must be set by an
// earlier one (`set -u`), every command must succeed (`set -e`), and no `tally` command is given
// --url: the CLI finds the server itself. Embedded database only: this is the first run the
// README describes (skipped in the PostgreSQL pass).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/process-server.js';

const root = path.resolve(import.meta.dirname, '../..');

/** The README's ```sh blocks after the set-up one (`npm ci && npm start`, which this test plays itself). */
function readmeBlocks(): string[] {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  expect(blocks[0]).toContain('npm ci && npm start');
  return blocks.slice(1);
}

/** The environment of a new terminal: none of the server's settings. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8' };
  return { ...env, ...extra };
}

describe.skipIf(Boolean(process.env.TEST_DATABASE_URL))('the README, followed word for word', () => {
  let folder: string;
  let server: ReturnType<typeof spawn>;
  let serverOutput = '';
  let port: number;

  beforeAll(async () => {
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-readme-'));
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(folder, 'node_modules'));
    port = await freePort();
    server = spawn(process.execPath, [path.join(root, 'scripts/start.mjs')], {
      cwd: folder,
      env: cleanEnv({ PORT: String(port) }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    server.stdout!.on('data', (d) => (serverOutput += d));
    server.stderr!.on('data', (d) => (serverOutput += d));
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`the server exited:\n${serverOutput}`);
      if (fs.existsSync(path.join(folder, '.data/server.json'))) break;
      if (Date.now() > deadline) throw new Error(`the server did not start:\n${serverOutput}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }, 150_000);

  afterAll(async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((r) => server.once('exit', r));
    }
    if (folder) fs.rmSync(folder, { recursive: true, force: true });
  });

  it('records where it listens, for the CLI: the real port, readable only by its owner', () => {
    const file = path.join(folder, '.data/server.json');
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toMatchObject({ url: `http://127.0.0.1:${port}` });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it('runs every command of the README in order, without --url, and each does what it says', () => {
    const script = ['set -euo pipefail', ...readmeBlocks(), 'echo "CAMPAIGN_ID=$CAMPAIGN_ID"'].join('\n');
    expect(script).not.toContain('--url');
    const run = spawnSync('bash', ['-c', script], { cwd: folder, env: cleanEnv(), encoding: 'utf8', timeout: 240_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, `${output}\n--- server ---\n${serverOutput}`).toBe(0);
    // the events, the profile and the refusal without a key
    expect(run.stdout).toContain('"success":true');
    expect(run.stdout).toContain('"code":"MISSING_AUTH"');
    // a metric, an answer in words and an audience over the demo data
    expect(run.stdout).toMatch(/"metric":"dau"/);
    expect(run.stdout).toContain('"query_method"');
    expect(run.stdout).toMatch(/"name":"Buyers"/);
    // the campaign the README creates, then reads back by the id it kept
    const id = /CAMPAIGN_ID=([0-9a-f-]{36})/.exec(run.stdout)?.[1];
    expect(id, output).toBeDefined();
    expect(run.stdout).toContain(`"campaign_id":"${id}"`);
    // tally init --json
    expect(run.stdout).toMatch(/"organization_id": "[0-9a-f-]{36}"/);
  }, 300_000);

  it('stops quietly when the reader of its output goes away (| head)', () => {
    const app = JSON.parse(fs.readFileSync(path.join(folder, '.data/credentials.json'), 'utf8')).app_id;
    const run = spawnSync(
      'bash',
      ['-c', `set -o pipefail; npx tally users export ${app} demo-user-00001 | head -c 10; echo " exit=$?"`],
      { cwd: folder, env: cleanEnv(), encoding: 'utf8', timeout: 60_000 },
    );
    expect(run.stderr).not.toMatch(/EPIPE|Error|at /);
    expect(run.stdout).toMatch(/ exit=0$/m);
  }, 90_000);
});
