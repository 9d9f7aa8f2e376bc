// What cli.test.ts and cli-operations.test.ts share: the server the CLI talks to (one per file, set
// up by setUpCliServer), a scratch directory, and ways to run the CLI as a child process
// (`node server/bin/tally.mjs ...` from the repo root). `server` and `admin` are live bindings, set
// by the set-up.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, expect } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

const root = path.resolve(import.meta.dirname, '../..');
export const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-cli-'));
export let server: TestServer;
export let admin: TallyClient;

/** Starts the server before the file's tests; stops it and removes the scratch directory after. */
export function setUpCliServer(): void {
  beforeAll(async () => {
    // Push provider secrets are encrypted with SECRET_KEY, so the server needs one.
    server = await startTestServer({ SECRET_KEY: 'cli-test-secret-key-0123456789' });
    admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
  });
  afterAll(async () => {
    await server?.close();
    fs.rmSync(scratch, { recursive: true, force: true });
  });
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with its own DATA_DIR (so nothing falls back to the repository's ./.data). */
export function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['server/bin/tally.mjs', ...args], {
      cwd: root,
      env: { ...process.env, DATA_DIR: path.join(scratch, 'none'), DATABASE_URL: '', ADMIN_TOKEN: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs an admin command against the test server. */
export const tally = (...args: string[]) =>
  run([...args, '--url', server.url, '--admin-token', server.config.adminToken!]);

/** Runs a command that must succeed with --json, and returns the one JSON object it printed. */
export async function json(...args: string[]) {
  const result = await tally(...args, '--json');
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
}

/** A new organization with one app, made through the admin API. */
export async function newApp() {
  const { data: org } = await admin.adminOrganizationsCreate({ body: { name: 'CLI org' } });
  const { data: app } = await admin.adminAppsCreate({
    body: { organization_id: org!.organization_id, name: 'CLI app' },
  });
  return app!;
}

/** An event for the keys the CLI prints to track. */
export const event = { event_name: 'signup', user_id: 'user-1' };
