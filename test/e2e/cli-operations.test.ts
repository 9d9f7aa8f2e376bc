// The `tally` CLI as operators run it, working with what is set up: seed-demo, campaigns (create,
// list, show, pause, resume, the campaign protections, campaigns from AI clients), how errors are
// reported, and migrate (embedded data directory and its lock, or DATABASE_URL). A child process
// (`node server/bin/tally.mjs ...` from the repo root) against a real server; each command's output
// is checked, and so is its effect. Set-up commands are in cli.test.ts; the shared set-up is in
// cli-helpers.ts.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../server/src/storage/db.js';
import { lockDataDir } from '../../server/src/storage/lock.js';
import { admin, json, newApp, run, scratch, server, setUpCliServer, tally } from './cli-helpers.js';

setUpCliServer();

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
    // with a push provider, so that creating the campaign warns of nothing (json() checks stderr)
    const provider = await admin.adminPushConfigure({
      path: { app_id: app.app_id },
      body: {
        provider: 'webhook',
        webhook_url: 'https://hooks.example/tally',
        webhook_secret: 'whsec-cli-ops-0123456',
      },
    });
    expect(provider.error).toBeUndefined();
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
