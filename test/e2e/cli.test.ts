// The `tally` CLI as operators run it: a child process (`node server/bin/tally.mjs ...` from the
// repo root) against a real server. Each command's JSON output is checked, and so is its effect,
// read back through the admin API or by using the keys it printed.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../server/src/storage/db.js';
import { lockDataDir } from '../../server/src/storage/lock.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const root = path.resolve(import.meta.dirname, '../..');
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-cli-'));
let server: TestServer;
let admin: TallyClient;

beforeAll(async () => {
  // Push provider secrets are encrypted with SECRET_KEY, so the server needs one.
  server = await startTestServer({ SECRET_KEY: 'cli-test-secret-key-0123456789' });
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
});
afterAll(async () => {
  await server?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with its own DATA_DIR (so nothing falls back to the repository's ./.data). */
function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
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
const tally = (...args: string[]) => run([...args, '--url', server.url, '--admin-token', server.config.adminToken!]);

/** Runs a command that must succeed with --json, and returns the one JSON object it printed. */
async function json(...args: string[]) {
  const result = await tally(...args, '--json');
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return JSON.parse(result.stdout);
}

async function newApp() {
  const { data: org } = await admin.adminOrganizationsCreate({ body: { name: 'CLI org' } });
  const { data: app } = await admin.adminAppsCreate({
    body: { organization_id: org!.organization_id, name: 'CLI app' },
  });
  return app!;
}

const event = { event_name: 'signup', user_id: 'user-1' };

describe('tally init', () => {
  it('creates an organization, an app and working REST and MCP keys', async () => {
    const out = await json(
      'init',
      '--name',
      'Rocket',
      '--timezone',
      'Europe/Paris',
      '--website-url',
      'https://rocket.example',
    );
    expect(out).toEqual({
      organization_id: expect.any(String),
      app_id: expect.any(String),
      api_key: expect.stringMatching(/^tk_live_/),
      mcp_api_key: expect.stringMatching(/^tk_mcp_/),
    });
    const { data: org } = await admin.adminOrganizationsGet({ path: { organization_id: out.organization_id } });
    expect(org).toMatchObject({ name: 'Rocket', timezone: 'Europe/Paris' });
    const { data: app } = await admin.adminAppsGet({ path: { app_id: out.app_id } });
    expect(app).toMatchObject({ organization_id: out.organization_id, website_url: 'https://rocket.example' });

    const tracked = await server.clientFor(out.api_key).eventsTrack({ body: event });
    expect(tracked.response.status).toBe(200);
    const stored = await server.db.knex('events').where({ app_id: out.app_id, id: tracked.data!.event_id }).first();
    expect(stored).toBeDefined();

    const mcp = await createTallyClient({ baseUrl: server.url, mcpApiKey: out.mcp_api_key }).mcpAuth();
    expect(mcp.response.status).toBe(200);
    expect(mcp.data).toMatchObject({ permissions: ['read', 'write'] });
    expect(JSON.stringify(mcp.data)).toContain(out.organization_id);
  });
});

describe('organizations, apps and versions', () => {
  it('orgs update changes the settings given', async () => {
    const { data: org } = await admin.adminOrganizationsCreate({ body: { name: 'Before', description: 'old' } });
    const id = org!.organization_id;
    const out = await json('orgs', 'update', id, '--name', 'After', '--description', 'new', '--timezone', 'Asia/Tokyo');
    expect(out).toMatchObject({ organization_id: id, name: 'After', description: 'new', timezone: 'Asia/Tokyo' });
    expect(out).not.toHaveProperty('success');
    const { data } = await admin.adminOrganizationsGet({ path: { organization_id: id } });
    expect(data).toMatchObject({ name: 'After', description: 'new', timezone: 'Asia/Tokyo' });
  });

  it('apps create makes an app in the organization', async () => {
    const { data: org } = await admin.adminOrganizationsCreate({ body: { name: 'Apps org' } });
    const out = await json(
      'apps',
      'create',
      '--org',
      org!.organization_id,
      '--name',
      'Store',
      '--website-url',
      'https://store.example',
    );
    expect(out).toMatchObject({ app_id: expect.any(String), organization_id: org!.organization_id, name: 'Store' });
    const { data: list } = await admin.adminAppsList({ query: { organization_id: org!.organization_id } });
    expect(list!.items).toEqual([
      expect.objectContaining({ app_id: out.app_id, website_url: 'https://store.example' }),
    ]);
  });

  it('apps update sets every setting, repeated flags replacing the whole list; "" clears a list', async () => {
    const app = await newApp();
    await admin.adminAppsUpdate({ path: { app_id: app.app_id }, body: { authorized_domains: ['old.example'] } });
    const out = await json(
      'apps',
      'update',
      app.app_id,
      '--website-url',
      'https://www.example.com',
      '--authorized-domain',
      'a.example.com',
      '--authorized-domain',
      'b.example.com',
      '--bot-detection',
      'basic',
      '--conversion-event',
      'purchase',
      '--retention-days',
      '30',
      '--ip-mode',
      'truncate',
    );
    const expected = {
      website_url: 'https://www.example.com',
      authorized_domains: ['a.example.com', 'b.example.com'],
      bot_detection: 'basic',
      conversion_events: ['purchase'],
      retention_days: 30,
      ip_mode: 'truncate',
    };
    expect(out).toMatchObject({ app_id: app.app_id, ...expected });
    const { data: read } = await admin.adminAppsGet({ path: { app_id: app.app_id } });
    expect(read).toMatchObject(expected);

    // Without --json: a readable summary; "" clears the list, "forever" the retention.
    const human = await tally('apps', 'update', app.app_id, '--authorized-domain', '', '--retention-days', 'forever');
    expect(human.stderr).toBe('');
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(`Updated app ${app.app_id}`);
    expect(() => JSON.parse(human.stdout)).toThrow();
    const { data: cleared } = await admin.adminAppsGet({ path: { app_id: app.app_id } });
    expect(cleared).toMatchObject({ authorized_domains: [], retention_days: null, conversion_events: ['purchase'] });
  });

  it('apps update --identity-secret generates a secret printed once, and remove-old rotates it out', async () => {
    const app = await newApp();
    const first = await json(
      'apps',
      'update',
      app.app_id,
      '--website-url',
      'https://shop.example',
      '--identity-secret',
      'generate',
    );
    expect(first).toMatchObject({
      app_id: app.app_id,
      website_url: 'https://shop.example',
      identity_secret: { secret_id: expect.any(String), secret: expect.stringMatching(/^tis_/) },
    });
    expect(first.identity_secrets).toHaveLength(1);
    // The secret works: a hash made with it identifies a visitor.
    const userHash = createHmac('sha256', first.identity_secret.secret).update('member-1').digest('hex');
    const identified = await server.clientFor().websiteIdentify({
      body: { app_id: app.app_id, visitor_id: 'visitor-1', user_id: 'member-1', user_hash: userHash },
      headers: { Origin: 'https://shop.example' },
    });
    expect(identified.response.status).toBe(200);

    const human = await tally('apps', 'update', app.app_id, '--identity-secret', 'generate');
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/tis_[\w-]{43}/);
    expect(human.stdout).toContain('shown only once');
    expect(human.stdout).toContain('remove-old');
    const third = await tally('apps', 'update', app.app_id, '--identity-secret', 'generate');
    expect(third.code).not.toBe(0);
    expect(third.stderr).toContain('CONFLICT');

    const removed = await json('apps', 'update', app.app_id, '--identity-secret', 'remove-old');
    expect(removed.identity_secret_removed).toBe(first.identity_secret.secret_id);
    expect(removed.identity_secrets).toHaveLength(1);
    const { data: list } = await admin.adminIdentitySecretsList({ path: { app_id: app.app_id } });
    expect(list!.items.map((i) => i.secret_id)).toEqual(
      removed.identity_secrets.map((i: { secret_id: string }) => i.secret_id),
    );
    const last = await tally('apps', 'update', app.app_id, '--identity-secret', 'remove-old');
    expect(last.code).not.toBe(0);
    expect(last.stderr).toContain('Generate a new one first');
    const bad = await tally('apps', 'update', app.app_id, '--identity-secret', 'rotate');
    expect(bad.code).not.toBe(0);
  });

  it('versions add records a version', async () => {
    const app = await newApp();
    const out = await json(
      'versions',
      'add',
      app.app_id,
      '--version',
      '2.4.0',
      '--release-notes',
      'Dark mode',
      '--released-at',
      '2026-05-01T10:00:00Z',
      '--created-by',
      'ci',
    );
    const expected = {
      version: '2.4.0',
      release_notes: 'Dark mode',
      released_at: '2026-05-01T10:00:00.000Z',
      created_by: 'ci',
    };
    expect(out).toEqual({ id: expect.any(String), ...expected });
    const { data } = await admin.adminVersionsList({ path: { app_id: app.app_id } });
    expect(data!.items).toEqual([{ id: out.id, ...expected }]);
  });
});

describe('tally keys', () => {
  it('creates REST and MCP keys, lists them without secrets, and revokes one', async () => {
    const app = await newApp();
    const rest = await json('keys', 'create', app.app_id, '--kind', 'rest', '--org-wide');
    expect(rest).toMatchObject({ key_id: expect.any(String), key: expect.stringMatching(/^tk_live_/), org_wide: true });
    const mcp = await json('keys', 'create', app.app_id, '--kind', 'mcp');
    expect(mcp).toMatchObject({ key: expect.stringMatching(/^tk_mcp_/), permissions: ['read', 'write'] });

    const client = server.clientFor(rest.key);
    expect((await client.eventsTrack({ body: event })).response.status).toBe(200);
    const mcpAuth = await createTallyClient({ baseUrl: server.url, mcpApiKey: mcp.key }).mcpAuth();
    expect(mcpAuth.response.status).toBe(200);

    const list = await json('keys', 'list', app.app_id);
    expect(Object.keys(list)).toEqual(['items']);
    expect(list.items.map((k: { key_id: string }) => k.key_id).sort()).toEqual([rest.key_id, mcp.key_id].sort());
    expect(JSON.stringify(list)).not.toContain(rest.key);
    expect(JSON.stringify(list)).not.toContain(mcp.key);

    expect(await json('keys', 'revoke', rest.key_id)).toEqual({ key_id: rest.key_id, revoked: true });
    const refused = await client.eventsTrack({ body: event });
    expect(refused.response.status).toBe(401);
    expect(refused.error).toMatchObject({ code: 'REVOKED_API_KEY' });
  });

  it('reads the admin token from <DATA_DIR>/credentials.json when --admin-token is not given', async () => {
    const app = await newApp();
    const dataDir = path.join(scratch, 'with-credentials');
    fs.mkdirSync(dataDir);
    fs.writeFileSync(path.join(dataDir, 'credentials.json'), JSON.stringify({ admin_token: server.config.adminToken }));
    const withFile = await run(['keys', 'list', app.app_id, '--json', '--url', server.url], { DATA_DIR: dataDir });
    expect(withFile.stderr).toBe('');
    expect(JSON.parse(withFile.stdout)).toEqual({ items: [] });

    const without = await run(['keys', 'list', app.app_id, '--url', server.url]);
    expect(without.code).not.toBe(0);
    expect(without.stderr).toContain('No admin token');
  });
});

describe('tally push configure', () => {
  it('configures the provider and prints the configuration without secrets', async () => {
    const app = await newApp();
    const out = await json(
      'push',
      'configure',
      app.app_id,
      '--provider',
      'webhook',
      '--webhook-url',
      'https://hooks.example.com/tally',
      '--webhook-secret',
      'hook-secret-value',
    );
    expect(out).toMatchObject({ provider: 'webhook', webhook_url: 'https://hooks.example.com/tally' });
    expect(JSON.stringify(out)).not.toContain('hook-secret-value');
    const { data } = await admin.adminPushGet({ path: { app_id: app.app_id } });
    expect(data).toMatchObject({ provider: 'webhook', webhook_url: 'https://hooks.example.com/tally' });
  });
});

describe('tally seed-demo', () => {
  it('generates deterministic demo data through the ingestion service', async () => {
    const app = await newApp();
    const args = ['seed-demo', app.app_id, '--users', '25', '--days', '7', '--seed', '3', '--end-date', '2026-03-31'];
    const out = await json(...args);
    expect(out).toEqual({ users: 25, events: expect.any(Number) });
    expect(out.events).toBeGreaterThan(0);
    const stored = await server.db
      .knex('events')
      .where({ app_id: app.app_id })
      .count<{ count: string }[]>('* as count');
    expect(Number(stored[0]!.count)).toBe(out.events);
    const users = await server.db.knex('users').where({ app_id: app.app_id }).count<{ count: string }[]>('* as count');
    expect(Number(users[0]!.count)).toBe(25);
    // The same seed again adds nothing new: every generated event carries the same insert_id.
    const again = await json(...args);
    expect(again.events).toBe(0);
  });
});

describe('tally campaigns', () => {
  it('creates, lists, shows, pauses and resumes campaigns, and sets the campaign protections', async () => {
    const app = await newApp();
    const created = await json(
      'campaigns',
      'create',
      app.app_id,
      '--name',
      'Welcome back',
      '--title',
      'We miss you',
      '--message',
      'Come back {{first_name}}',
      '--schedule-type',
      'trigger',
      '--trigger-event-name',
      'cart_abandoned',
      '--trigger-cooldown-hours',
      '48',
    );
    expect(created).toMatchObject({
      name: 'Welcome back',
      status: 'scheduled',
      audience: null,
      trigger: { event_name: 'cart_abandoned', match_method: 'exact', available_events_count: 0 },
    });
    const now = await json(
      'campaigns',
      'create',
      app.app_id,
      '--name',
      'n',
      '--title',
      't',
      '--message',
      'm',
      '--schedule-type',
      'now',
    );
    expect(now.status).toBe('scheduled');
    const list = await json('campaigns', 'list', app.app_id);
    expect(list.items.map((c: { id: string }) => c.id)).toEqual([now.campaign_id, created.campaign_id]);
    const shown = await json('campaigns', 'show', created.campaign_id);
    expect(shown).toMatchObject({
      id: created.campaign_id,
      trigger_event: 'cart_abandoned',
      stats: { sent: 0, delivery_rate: 0 },
    });
    expect((await json('campaigns', 'pause', created.campaign_id)).status).toBe('paused');
    const again = await tally('campaigns', 'pause', created.campaign_id);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('CONFLICT');
    expect((await json('campaigns', 'resume', created.campaign_id)).status).toBe('scheduled');
    const human = await tally('campaigns', 'show', created.campaign_id);
    expect(human.stdout).toContain('cart_abandoned');
    expect(human.stdout).toContain('created by: the admin API or CLI');
    expect(shown.created_by).toEqual({ kind: 'admin', key_id: null, key_name: null });

    const updated = await json(
      'apps',
      'update',
      app.app_id,
      '--push-frequency-cap',
      '1',
      '--push-quiet-hours',
      '21:30-07:00',
    );
    expect(updated).toMatchObject({ push_frequency_cap_per_day: 1, push_quiet_hours: '21:30-07:00' });
    const cleared = await json('apps', 'update', app.app_id, '--push-quiet-hours', 'none');
    expect(cleared.push_quiet_hours).toBeNull();
  }, 90_000 /* ten CLI processes, each a few seconds on a loaded machine */);

  it('turns campaign creation by AI clients (MCP) off and on', async () => {
    const app = await newApp();
    expect((await json('apps', 'update', app.app_id, '--mcp-campaigns', 'off')).mcp_campaigns).toBe(false);
    const shown = await tally('apps', 'update', app.app_id, '--mcp-campaigns', 'on');
    expect(shown.stdout).toContain('campaigns from AI clients (MCP): allowed');
    const bad = await tally('apps', 'update', app.app_id, '--mcp-campaigns', 'maybe');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('maybe');
  });
});

describe('errors', () => {
  it('prints the server message and code on stderr and exits non-zero', async () => {
    const unknown = '01900000-0000-7000-8000-000000000000';
    const result = await tally('apps', 'update', unknown, '--name', 'x', '--json');
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(`No app with id ${unknown}.`);
    expect(result.stderr).toContain('NOT_FOUND');
  });

  it('reports what the server answers for a capability it may not offer yet (501 NOT_IMPLEMENTED)', async () => {
    const campaignId = '01900000-0000-7000-8000-0000000000aa';
    const direct = await admin.adminCampaignsPause({ path: { campaign_id: campaignId } });
    expect([404, 501]).toContain(direct.response.status);
    const result = await tally('campaigns', 'pause', campaignId);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(direct.error!.message);
    expect(result.stderr).toContain(direct.error!.code);
  });

  it('says so when no server answers', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as net.AddressInfo;
        s.close(() => resolve(port));
      });
    });
    const result = await run(['keys', 'list', 'x', '--url', `http://127.0.0.1:${port}`, '--admin-token', 'x']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`Could not reach the Tally server at http://127.0.0.1:${port}`);
  });
});

describe('tally migrate', () => {
  it('migrates an embedded data directory, and refuses while a live process holds its lock', async () => {
    const dataDir = path.join(scratch, 'migrate');
    const first = await run(['migrate', '--json'], { DATA_DIR: dataDir });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const out = JSON.parse(first.stdout);
    expect(out).toMatchObject({ database: 'pglite', data_dir: dataDir, migrations: expect.any(Array) });
    expect(out.migrations.length).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(dataDir, 'tally.lock'))).toBe(false);

    const lock = lockDataDir(dataDir);
    try {
      const refused = await run(['migrate'], { DATA_DIR: dataDir });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('Refusing to migrate while a server holds the embedded database');
      expect(refused.stderr).toContain(`in use by process ${process.pid}`);
    } finally {
      lock.release();
    }

    const db = await openDatabase({ dataDir, migrate: false });
    try {
      const rows: { name: string }[] = await db.knex('knex_migrations').select('name').orderBy('id');
      expect(rows.map((r) => r.name)).toEqual(out.migrations);
    } finally {
      await db.close();
    }
  }, 120_000);

  it.runIf(inject('database').kind === 'postgres')('migrates the database named by DATABASE_URL', async () => {
    const target = inject('database') as { kind: 'postgres'; url: string };
    const result = await run(['migrate', '--json'], { DATABASE_URL: target.url });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout);
    expect(out).toMatchObject({ database: 'postgres' });
    const rows: { name: string }[] = await server.db.knex('knex_migrations').select('name').orderBy('id');
    expect(out.migrations).toEqual(rows.map((r) => r.name));
  });
});
