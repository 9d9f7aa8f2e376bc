// The `tally` CLI as operators run it, setting things up: init, organizations, apps (settings,
// identity secrets), versions, keys (and the admin token read from credentials.json) and the push
// provider. A child process (`node server/bin/tally.mjs ...` from the repo root) against a real
// server; each command's JSON output is checked, and so is its effect, read back through the admin
// API or by using the keys it printed. seed-demo, campaigns, errors and migrate are in
// cli-operations.test.ts; the shared set-up is in cli-helpers.ts.
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createTallyClient } from '@tally/client';
import { describe, expect, it } from 'vitest';
import { admin, event, json, newApp, run, scratch, server, setUpCliServer, tally } from './cli-helpers.js';

setUpCliServer();

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
