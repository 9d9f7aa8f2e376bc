// The admin API (/admin/v1) through @tally/client with the admin token: organizations, apps, keys
// and versions, and who may call it at all.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorPaths } from '../helpers/errors.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let admin: TallyClient;

beforeAll(async () => {
  server = await startTestServer();
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
});
afterAll(() => server?.close());

const unique = (prefix: string) => `${prefix} ${Math.random().toString(36).slice(2, 8)}`;
const UNKNOWN_ID = '01900000-0000-7000-8000-000000000000';

async function newOrganization(body: { name?: string; timezone?: string } = {}) {
  const { data, error } = await admin.adminOrganizationsCreate({ body: { name: unique('Org'), ...body } });
  expect(error).toBeUndefined();
  return data!;
}

async function newApp(organizationId: string, name = unique('App')) {
  const { data, error } = await admin.adminAppsCreate({ body: { organization_id: organizationId, name } });
  expect(error).toBeUndefined();
  return data!;
}

describe('organizations', () => {
  it('creates, reads, lists and updates an organization', async () => {
    const name = unique('Acme');
    const { data: created, response } = await admin.adminOrganizationsCreate({
      body: { name, description: 'Rockets', timezone: 'Europe/Paris' },
    });
    expect(response.status).toBe(200);
    expect(created).toEqual({
      success: true,
      organization_id: expect.any(String),
      name,
      description: 'Rockets',
      timezone: 'Europe/Paris',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = created!.organization_id;

    const { data: read } = await admin.adminOrganizationsGet({ path: { organization_id: id } });
    expect(read).toEqual(created);

    const { data: list } = await admin.adminOrganizationsList();
    expect(list!.items.find((o) => o.organization_id === id)).toMatchObject({ name, timezone: 'Europe/Paris' });

    const { data: updated } = await admin.adminOrganizationsUpdate({
      path: { organization_id: id },
      body: { name: `${name} Inc`, description: null, timezone: 'America/New_York' },
    });
    expect(updated).toMatchObject({
      organization_id: id,
      name: `${name} Inc`,
      description: null,
      timezone: 'America/New_York',
    });
    const { data: reread } = await admin.adminOrganizationsGet({ path: { organization_id: id } });
    expect(reread).toMatchObject({ name: `${name} Inc`, description: null, timezone: 'America/New_York' });
  });

  it('defaults the time zone to UTC', async () => {
    expect((await newOrganization()).timezone).toBe('UTC');
  });

  it('refuses a time zone that is not an IANA name with 400', async () => {
    const create = await admin.adminOrganizationsCreate({ body: { name: 'x', timezone: 'Mars/Olympus' } });
    expect(create.response.status).toBe(400);
    expect(create.error).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('Mars/Olympus') });
    expect(errorPaths(create.error)).toEqual(['/body/timezone']);

    const org = await newOrganization();
    const update = await admin.adminOrganizationsUpdate({
      path: { organization_id: org.organization_id },
      body: { timezone: 'Nowhere' },
    });
    expect(update.response.status).toBe(400);
    const { data } = await admin.adminOrganizationsGet({ path: { organization_id: org.organization_id } });
    expect(data!.timezone).toBe('UTC');
  });

  it('answers 404 for an unknown organization', async () => {
    for (const id of [UNKNOWN_ID, 'not-an-id']) {
      const { error, response } = await admin.adminOrganizationsGet({ path: { organization_id: id } });
      expect(response.status).toBe(404);
      expect(error).toMatchObject({ code: 'NOT_FOUND' });
    }
    const update = await admin.adminOrganizationsUpdate({ path: { organization_id: UNKNOWN_ID }, body: { name: 'x' } });
    expect(update.response.status).toBe(404);
  });
});

describe('apps', () => {
  it('creates an app with default settings and changes them; list fields replace the whole list', async () => {
    const org = await newOrganization();
    const { data: app, response } = await admin.adminAppsCreate({
      body: { organization_id: org.organization_id, name: 'Shop', website_url: 'https://shop.example.com' },
    });
    expect(response.status).toBe(200);
    expect(app).toMatchObject({
      organization_id: org.organization_id,
      name: 'Shop',
      website_url: 'https://shop.example.com',
      authorized_domains: [],
      bot_detection: 'basic',
      advanced_attested: false,
      consent_message: null,
      conversion_events: [],
      retention_days: null,
      ip_mode: 'full',
    });
    const path = { app_id: app!.app_id };

    await admin.adminAppsUpdate({ path, body: { authorized_domains: ['a.example.com', 'b.example.com'] } });
    const { data: changed } = await admin.adminAppsUpdate({
      path,
      body: {
        authorized_domains: ['*.example.org'],
        conversion_events: ['purchase', 'subscribe'],
        retention_days: 90,
        ip_mode: 'truncate',
        bot_detection: 'off',
      },
    });
    expect(changed).toMatchObject({
      name: 'Shop',
      website_url: 'https://shop.example.com',
      authorized_domains: ['*.example.org'],
      conversion_events: ['purchase', 'subscribe'],
      retention_days: 90,
      ip_mode: 'truncate',
      bot_detection: 'off',
    });
    const { data: read } = await admin.adminAppsGet({ path });
    expect(read).toEqual(changed);

    const { data: cleared } = await admin.adminAppsUpdate({ path, body: { website_url: null, retention_days: null } });
    expect(cleared).toMatchObject({ website_url: null, retention_days: null, ip_mode: 'truncate' });
  });

  it('accepts advanced bot detection only once the consent message is attested', async () => {
    const org = await newOrganization();
    const app = await newApp(org.organization_id);
    const path = { app_id: app.app_id };
    const refused = await admin.adminAppsUpdate({ path, body: { bot_detection: 'advanced' } });
    expect(refused.response.status).toBe(400);
    expect(refused.error).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(errorPaths(refused.error)).toEqual(['/body/bot_detection']);
    expect((await admin.adminAppsGet({ path })).data!.bot_detection).toBe('basic');

    const createRefused = await admin.adminAppsCreate({
      body: { organization_id: org.organization_id, name: 'x', bot_detection: 'advanced' },
    });
    expect(createRefused.response.status).toBe(400);

    const { data: accepted } = await admin.adminAppsUpdate({
      path,
      body: { bot_detection: 'advanced', advanced_attested: true, consent_message: 'We use device signals.' },
    });
    expect(accepted).toMatchObject({ bot_detection: 'advanced', advanced_attested: true });
  });

  it('refuses a retention shorter than a day', async () => {
    const org = await newOrganization();
    const app = await newApp(org.organization_id);
    const { error, response } = await admin.adminAppsUpdate({
      path: { app_id: app.app_id },
      body: { retention_days: -1 },
    });
    expect(response.status).toBe(400);
    expect(errorPaths(error)).toEqual(['/body/retention_days']);
  });

  it('lists the apps of one organization, and answers 404 for an unknown organization or app', async () => {
    const org = await newOrganization();
    const other = await newOrganization();
    const a = await newApp(org.organization_id, 'A');
    const b = await newApp(org.organization_id, 'B');
    await newApp(other.organization_id, 'C');
    const { data } = await admin.adminAppsList({ query: { organization_id: org.organization_id } });
    expect(data!.items.map((x) => x.app_id).sort()).toEqual([a.app_id, b.app_id].sort());

    const { data: all } = await admin.adminAppsList();
    expect(all!.items.map((x) => x.app_id)).toEqual(expect.arrayContaining([a.app_id, b.app_id]));

    expect((await admin.adminAppsList({ query: { organization_id: UNKNOWN_ID } })).response.status).toBe(404);
    expect((await admin.adminAppsGet({ path: { app_id: UNKNOWN_ID } })).response.status).toBe(404);
    const orphan = await admin.adminAppsCreate({ body: { organization_id: UNKNOWN_ID, name: 'x' } });
    expect(orphan.response.status).toBe(404);
  });
});

describe('keys', () => {
  const event = { event_name: 'signup', user_id: 'user-1' };

  it('creates a REST key that records events, lists keys without secrets, and revokes it', async () => {
    const org = await newOrganization();
    const app = await newApp(org.organization_id);
    const path = { app_id: app.app_id };
    const { data: key, response } = await admin.adminKeysCreate({ path, body: { kind: 'rest', name: 'backend' } });
    expect(response.status).toBe(200);
    expect(key).toMatchObject({
      key: expect.stringMatching(/^tk_live_/),
      kind: 'rest',
      name: 'backend',
      app_id: app.app_id,
      organization_id: org.organization_id,
      org_wide: false,
      revoked_at: null,
    });
    const client = server.clientFor(key!.key);
    expect((await client.eventsTrack({ body: event })).response.status).toBe(200);

    const { data: list } = await admin.adminKeysList({ path });
    expect(list!.items).toHaveLength(1);
    const { key: _secret, success: _success, ...info } = key!;
    expect(list!.items[0]).toEqual(info);
    expect(JSON.stringify(list)).not.toContain(key!.key);

    const { data: revoked } = await admin.adminKeysRevoke({ path: { key_id: key!.key_id } });
    expect(revoked).toEqual({ success: true, key_id: key!.key_id, revoked: true });
    const after = await client.eventsTrack({ body: event });
    expect(after.response.status).toBe(401);
    expect(after.error).toMatchObject({ code: 'REVOKED_API_KEY' });
    const { data: listed } = await admin.adminKeysList({ path });
    expect(listed!.items[0]!.revoked_at).toEqual(expect.any(String));

    expect((await admin.adminKeysRevoke({ path: { key_id: UNKNOWN_ID } })).response.status).toBe(404);
    expect((await admin.adminKeysList({ path: { app_id: UNKNOWN_ID } })).response.status).toBe(404);
  });

  it('creates MCP keys for the organization, read and write by default', async () => {
    const org = await newOrganization();
    const app = await newApp(org.organization_id);
    const path = { app_id: app.app_id };
    const { data: full } = await admin.adminKeysCreate({ path, body: { kind: 'mcp' } });
    expect(full).toMatchObject({ key: expect.stringMatching(/^tk_mcp_/), kind: 'mcp', permissions: ['read', 'write'] });
    const { data: readOnly } = await admin.adminKeysCreate({ path, body: { kind: 'mcp', permissions: ['read'] } });
    expect(readOnly!.permissions).toEqual(['read']);

    const mcp = createTallyClient({ baseUrl: server.url, mcpApiKey: full!.key });
    const { data: auth, response } = await mcp.mcpAuth();
    expect(response.status).toBe(200);
    expect(JSON.stringify(auth)).toContain(org.organization_id);
    // An MCP key is not a REST key.
    expect((await server.clientFor(full!.key).eventsTrack({ body: event })).response.status).toBe(401);
  });

  it('lets an organization-wide key name a sibling app, and an app key only its own', async () => {
    const org = await newOrganization();
    const home = await newApp(org.organization_id);
    const sibling = await newApp(org.organization_id);
    const { data: wide } = await admin.adminKeysCreate({
      path: { app_id: home.app_id },
      body: { kind: 'rest', org_wide: true },
    });
    const { data: narrow } = await admin.adminKeysCreate({ path: { app_id: home.app_id }, body: { kind: 'rest' } });
    expect(wide!.org_wide).toBe(true);
    const viaWide = await server.clientFor(wide!.key).audiencesList({ query: { app_id: sibling.app_id } });
    expect(viaWide.response.status).not.toBe(404);
    expect(viaWide.response.status).not.toBe(401);
    const viaNarrow = await server.clientFor(narrow!.key).audiencesList({ query: { app_id: sibling.app_id } });
    expect(viaNarrow.response.status).toBe(404);

    const stranger = await newApp((await newOrganization()).organization_id);
    const foreign = await server.clientFor(wide!.key).audiencesList({ query: { app_id: stranger.app_id } });
    expect(foreign.response.status).toBe(404);
  });
});

describe('versions', () => {
  it('records versions and lists them latest release first', async () => {
    const org = await newOrganization();
    const app = await newApp(org.organization_id);
    const path = { app_id: app.app_id };
    const { data: v1 } = await admin.adminVersionsAdd({
      path,
      body: { version: '1.0.0', released_at: '2026-01-10T09:00:00Z', release_notes: 'First', created_by: 'ada' },
    });
    expect(v1).toEqual({
      success: true,
      id: expect.any(String),
      version: '1.0.0',
      release_notes: 'First',
      released_at: '2026-01-10T09:00:00.000Z',
      created_by: 'ada',
    });
    await admin.adminVersionsAdd({ path, body: { version: '1.2.0', released_at: '2026-03-01T09:00:00Z' } });
    await admin.adminVersionsAdd({ path, body: { version: '1.1.0', released_at: '2026-02-01T09:00:00Z' } });
    const { data: now } = await admin.adminVersionsAdd({ path, body: { version: '2.0.0' } });
    expect(now).toMatchObject({ release_notes: null, created_by: null });
    expect(Math.abs(Date.parse(now!.released_at) - Date.now())).toBeLessThan(60_000);

    const { data: list } = await admin.adminVersionsList({ path });
    expect(list!.items.map((v) => v.version)).toEqual(['2.0.0', '1.2.0', '1.1.0', '1.0.0']);
    expect(
      (await admin.adminVersionsAdd({ path: { app_id: UNKNOWN_ID }, body: { version: '1' } })).response.status,
    ).toBe(404);
  });
});

describe('admin authentication', () => {
  let tenant: Tenant;
  beforeAll(async () => {
    tenant = await server.createTenant();
  });

  it('answers 401 without the admin token, with a wrong one, and with a REST or MCP key', async () => {
    const none = await fetch(`${server.url}/admin/v1/organizations`);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ success: false, code: 'MISSING_AUTH' });

    const wrong = createTallyClient({ baseUrl: server.url, adminToken: 'tk_admin_wrong-token-000000' });
    const wrongResult = await wrong.adminOrganizationsList();
    expect(wrongResult.response.status).toBe(401);
    expect(wrongResult.error).toMatchObject({ code: 'INVALID_API_KEY' });

    for (const key of [tenant.apiKey, tenant.mcpKey]) {
      const res = await fetch(`${server.url}/admin/v1/organizations`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(401);
      const create = await fetch(`${server.url}/admin/v1/apps/${tenant.app.id}/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'rest' }),
      });
      expect(create.status).toBe(401);
    }
    const viaMcpHeader = await fetch(`${server.url}/admin/v1/organizations`, {
      headers: { 'x-mcp-api-key': tenant.mcpKey },
    });
    expect(viaMcpHeader.status).toBe(401);
  });
});
