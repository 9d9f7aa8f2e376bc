// `tally users export`, `tally users erase` and `tally audit` as operators run them: a child
// process against a real server; the export is the whole JSON document on stdout, the erasure
// takes the user (found through an alias) away, and the audit trail lists both with actor admin.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const root = path.resolve(import.meta.dirname, '../..');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-cli-privacy-'));
let server: TestServer;
let t: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  t = await server.createTenant();
  await t.client.eventsTrackBatch({
    body: {
      events: Array.from({ length: 100 }, (_, i) => ({
        user_id: 'cli-user',
        event_name: 'tick',
        properties: { i },
        timestamp: new Date(Date.parse('2026-01-01T00:00:00Z') + i * 1000).toISOString(),
      })),
    },
  });
  await t.client.usersCreateAlias({ body: { user_id: 'cli-user', alias_id: 'cli-alias' } });
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

function tally(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['server/bin/tally.mjs', ...args, '--url', server.url, '--admin-token', server.config.adminToken!],
      {
        cwd: root,
        env: { ...process.env, DATA_DIR: path.join(scratch, 'none'), DATABASE_URL: '', ADMIN_TOKEN: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
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

describe('tally users and audit', () => {
  it('exports a user as one JSON document', async () => {
    const out = await tally('users', 'export', t.app.id, 'cli-alias');
    expect(out.stderr).toBe('');
    expect(out.code).toBe(0);
    const body = JSON.parse(out.stdout);
    expect(body.user.external_id).toBe('cli-user');
    expect(body.events).toHaveLength(100);
    expect(body.aliases.map((a: { alias_id: string }) => a.alias_id)).toEqual(['cli-alias']);
  }, 60_000);

  it('says why when the user does not exist', async () => {
    const out = await tally('users', 'export', t.app.id, 'nobody');
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/No user with id "nobody".*NOT_FOUND/);
    const erase = await tally('users', 'erase', t.app.id, 'nobody', '--json');
    expect(erase.code).not.toBe(0);
    expect(erase.stderr).toMatch(/NOT_FOUND/);
  }, 60_000);

  it('erases a user through an alias, then lists both actions in the audit trail', async () => {
    const out = await tally('users', 'erase', t.app.id, 'cli-alias', '--json');
    expect(out.stderr).toBe('');
    expect(JSON.parse(out.stdout)).toEqual({
      erased: {
        users: 1,
        aliases: 1,
        events: 100,
        visits: 0,
        push_subscriptions: 0,
        deliveries: 0,
        queued_sends_cancelled: 0,
      },
    });
    expect((await t.client.usersExport({ path: { user_id: 'cli-user' } })).response.status).toBe(404);
    const audit = await tally('audit', t.app.id, '--json');
    const trail = JSON.parse(audit.stdout);
    expect(trail.items.map((i: { action: string }) => i.action)).toEqual(['user.erase', 'user.export']);
    expect(trail.items[0]).toMatchObject({
      actor: 'env',
      actor_kind: 'admin',
      actor_name: 'ADMIN_TOKEN',
      user_id: 'cli-alias',
      campaign_id: null,
      counts: { events: 100 },
    });
    const human = await tally('audit', t.app.id);
    expect(human.stdout).toMatch(/^2 audit entries/);
    const lines = human.stdout.split('\n');
    expect(lines[1]).toMatch(/^TIME\s+ACTION\s+ACTOR\s+SUBJECT\s+DETAILS$/);
    expect(lines[2]).toMatch(/user\.erase\s+admin env \(ADMIN_TOKEN\)\s+user "cli-alias"\s+.*events=100/);
  }, 60_000);
});
