// The audit trail as an operator reads it: every admin action done once through the admin API
// leaves exactly one entry, naming the admin token that acted and when, with no secret value
// anywhere (keys, admin tokens, provider credentials, identity secrets, SECRET_KEY); an app's
// trail never shows another app's entries, however the request is bent; and `tally audit` prints
// the same entries as a table or JSON. The server runs on a database of this file's own, with a
// stored admin token (no ADMIN_TOKEN), so the admin token rotation is recorded too.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueAdminToken } from '../../server/src/admin/keys.js';
import type { Database } from '../../server/src/storage/db.js';
import { startFakeWebhook } from '../helpers/fake-push.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { run } from './cli-helpers.js';

const SECRET_KEY = 'audit-trail-secret-key-0123456789';
const OLD_SECRET_KEY = 'audit-trail-old-secret-key-98765';
const HOOK_SECRET = 'whsec-audit-SECRET-5d4c3b2a';

let own: { database: Database; close(): Promise<void> };
let server: TestServer;
let token: string;
let tokenId: string;
let admin: TallyClient;
let hook: Awaited<ReturnType<typeof startFakeWebhook>>;
/** Every secret value the actions below handle; none may appear in any entry. */
const secrets: string[] = [SECRET_KEY, OLD_SECRET_KEY, HOOK_SECRET];
let appA: string;
let appB: string;
let campaignB: string;
const started = new Date();

beforeAll(async () => {
  own = await openOwnDatabase('audit_trail');
  const issued = await issueAdminToken(own.database.knex, new Date(), 'audit test');
  token = issued.token;
  tokenId = issued.row.id;
  secrets.push(token);
  server = await startTestServer(
    { ADMIN_TOKEN: '', SECRET_KEY, SECRET_KEY_PREVIOUS: OLD_SECRET_KEY },
    { database: own.database },
  );
  admin = createTallyClient({ baseUrl: server.url, adminToken: token });
  hook = await startFakeWebhook({ secret: HOOK_SECRET });
}, 120_000);
afterAll(async () => {
  await hook?.close();
  await server?.close();
  await own?.close();
});

function ok<T>(result: { data?: T; error?: unknown; response: Response }): T {
  expect(result.error, `HTTP ${result.response.status}`).toBeUndefined();
  return result.data!;
}

async function everyAdminActionOnce(): Promise<void> {
  const org = ok(await admin.adminOrganizationsCreate({ body: { name: 'Audit org' } }));
  ok(
    await admin.adminOrganizationsUpdate({
      path: { organization_id: org.organization_id },
      body: { timezone: 'Europe/Paris' },
    }),
  );
  appA = ok(await admin.adminAppsCreate({ body: { organization_id: org.organization_id, name: 'A' } })).app_id;
  appB = ok(await admin.adminAppsCreate({ body: { organization_id: org.organization_id, name: 'B' } })).app_id;
  const path = { app_id: appA };
  ok(
    await admin.adminAppsUpdate({
      path,
      body: { website_url: 'https://shop.example', authorized_domains: ['*.shop.example'] },
    }),
  );
  const key = ok(await admin.adminKeysCreate({ path, body: { kind: 'rest', name: 'integration' } }));
  secrets.push(key.key);
  const rest = createTallyClient({ baseUrl: server.url, apiKey: key.key });
  for (const user_id of ['kept', 'gone'])
    ok(await rest.usersUpsert({ body: { user_id, email: `${user_id}@example.com` } }));
  ok(
    await admin.adminPushConfigure({
      path,
      body: { provider: 'webhook', webhook_url: `${hook.baseUrl}/t`, webhook_secret: HOOK_SECRET },
    }),
  );
  const identity = ok(await admin.adminIdentitySecretsGenerate({ path }));
  secrets.push(identity.secret);
  ok(await admin.adminIdentitySecretsRemove({ path: { ...path, secret_id: identity.secret_id } }));
  const body = {
    name: 'Spring',
    title: 'Hello',
    message: 'Hi',
    schedule_type: 'scheduled' as const,
    scheduled_at: '2099-01-01T10:00:00Z',
  };
  const campaign = ok(await admin.adminCampaignsCreate({ path, body }));
  ok(await admin.adminCampaignsPause({ path: { campaign_id: campaign.campaign_id } }));
  ok(await admin.adminCampaignsResume({ path: { campaign_id: campaign.campaign_id } }));
  campaignB = ok(await admin.adminCampaignsCreate({ path: { app_id: appB }, body })).campaign_id;
  ok(await admin.adminVersionsAdd({ path, body: { version: '1.2.0' } }));
  ok(await admin.adminDemoSeed({ path, body: { users: 3, days: 2, seed: 7, end_date: '2026-03-01' } }));
  ok(await admin.adminPrivacyExportUser({ path: { ...path, user_id: 'kept' } }));
  ok(await admin.adminPrivacyEraseUser({ path: { ...path, user_id: 'gone' } }));
  ok(await admin.adminKeysRevoke({ path: { key_id: key.key_id } }));
  ok(await admin.adminSecretKeyReseal());
}

describe('the audit trail', () => {
  it('records each admin action exactly once, with the token that acted and the time, and no secret', async () => {
    await everyAdminActionOnce();
    // Last, since retiring ends the token used so far.
    const rotated = ok(await admin.adminTokensRotate({ body: { overlap_seconds: 600, label: 'next' } }));
    secrets.push(rotated.token);
    const next = createTallyClient({ baseUrl: server.url, adminToken: rotated.token });
    ok(await next.adminTokensRetirePrevious());

    const trail = ok(await next.adminPrivacyAudit({ path: { app_id: appA } }));
    const actions = trail.items.map((i) => i.action).sort();
    expect(actions).toEqual(
      [
        'app.create',
        'app.update',
        'campaign.create',
        'campaign.pause',
        'campaign.resume',
        'demo.seed',
        'identity_secret.generate',
        'identity_secret.remove',
        'key.create',
        'key.revoke',
        'push_provider.configure',
        'user.erase',
        'user.export',
        'version.add',
      ].sort(),
    );
    const finished = Date.now();
    for (const entry of trail.items) {
      expect(entry, entry.action).toMatchObject({ actor: tokenId, actor_kind: 'admin', actor_name: 'audit test' });
      const at = Date.parse(entry.created_at);
      expect(at).toBeGreaterThanOrEqual(started.getTime() - 1000);
      expect(at).toBeLessThanOrEqual(finished + 1000);
    }
    const byAction = Object.fromEntries(trail.items.map((i) => [i.action, i]));
    expect(byAction['app.update']!.details).toEqual({
      changes: {
        website_url: { from: null, to: 'https://shop.example' },
        authorized_domains: { from: [], to: ['*.shop.example'] },
      },
    });
    expect(byAction['push_provider.configure']!.details).toMatchObject({
      provider: 'webhook',
      secrets_set: ['webhook_secret'],
    });
    expect(byAction['campaign.pause']!.details).toEqual({ from: 'scheduled', to: 'paused' });
    expect(byAction['campaign.resume']!.details).toEqual({ from: 'paused', to: 'scheduled' });
    expect(byAction['user.erase']).toMatchObject({ user_id: 'gone', counts: { users: 1 } });

    const installation = ok(await next.adminAuditList({ query: { limit: 1000 } }));
    const mine = installation.items.filter((i) => Date.parse(i.created_at) >= started.getTime() - 1000);
    expect(mine.map((i) => i.action).sort()).toEqual(
      [
        'admin_token.retire',
        'admin_token.rotate',
        'organization.create',
        'organization.update',
        'secret_key.reseal',
      ].sort(),
    );
    const rotate = mine.find((i) => i.action === 'admin_token.rotate')!;
    expect(rotate).toMatchObject({ actor: tokenId, actor_kind: 'admin', details: { token_id: rotated.token_id } });
    expect(mine.find((i) => i.action === 'admin_token.retire')).toMatchObject({
      actor: rotated.token_id,
      actor_name: 'next',
    });

    const everything = JSON.stringify([
      trail,
      installation,
      ok(await next.adminPrivacyAudit({ path: { app_id: appB } })),
    ]);
    for (const secret of secrets) expect(everything).not.toContain(secret);
  });

  it('shows an app only its own entries, however the request is bent', async () => {
    // the first token was retired by the previous test; the rotated one is the last secret recorded
    expect((await admin.adminPrivacyAudit({ path: { app_id: appA } })).response.status).toBe(401);
    const token2 = secrets[secrets.length - 1]!;
    const a = createTallyClient({ baseUrl: server.url, adminToken: token2 });
    const own = ok(await a.adminPrivacyAudit({ path: { app_id: appA }, query: { limit: 1000 } }));
    expect(own.items.every((i) => i.campaign_id !== campaignB)).toBe(true);
    const other = ok(await a.adminPrivacyAudit({ path: { app_id: appB }, query: { limit: 1000 } }));
    expect(other.items.map((i) => i.action).sort()).toEqual(['app.create', 'campaign.create']);
    const ids = new Set(own.items.map((i) => i.id));
    expect(other.items.some((i) => ids.has(i.id))).toBe(false);

    // a filter of the app's trail narrows it; it never widens it
    const revoked = ok(await a.adminPrivacyAudit({ path: { app_id: appA }, query: { action: 'key.revoke' } }));
    expect(revoked.items).toHaveLength(1);
    expect(revoked.total).toBe(1);
    const raw = (query: string) =>
      fetch(`${server.url}/admin/v1/apps/${appA}/audit?${query}`, { headers: { authorization: `Bearer ${token2}` } });
    for (const query of [`app_id=${appB}`, "action=key.revoke' OR '1'='1", 'action=organization.create', 'limit=0']) {
      const res = await raw(query);
      expect(res.status, query).toBe(400);
      expect(await res.json()).toMatchObject({ success: false, code: 'INVALID_REQUEST' });
    }
    for (const appId of ['not-a-uuid', '0190f0f0-0000-7000-8000-000000000000', `${appA}%20OR%201=1`]) {
      const res = await fetch(`${server.url}/admin/v1/apps/${appId}/audit`, {
        headers: { authorization: `Bearer ${token2}` },
      });
      expect(res.status, appId).toBe(404);
    }
    // an app's REST key is not an admin token
    const tenant = await server.createTenant();
    const byKey = await fetch(`${server.url}/admin/v1/apps/${tenant.app.id}/audit`, {
      headers: { authorization: `Bearer ${tenant.apiKey}` },
    });
    expect(byKey.status).toBe(401);
  });

  it('prints the trail with tally audit, as a table and as JSON', async () => {
    const token2 = secrets[secrets.length - 1]!;
    const flags = ['--url', server.url, '--admin-token', token2];
    const json = await run(['audit', appA, '--action', 'campaign.pause', '--json', ...flags]);
    expect(json.stderr).toBe('');
    const page = JSON.parse(json.stdout);
    expect(page.items).toHaveLength(1);
    expect(page.items[0]).toMatchObject({ action: 'campaign.pause', actor: tokenId, details: { to: 'paused' } });
    const human = await run(['audit', appA, ...flags]);
    expect(human.code).toBe(0);
    const lines = human.stdout.trim().split('\n');
    expect(lines[0]).toBe(`14 audit entries for app ${appA}.`);
    expect(lines[1]).toMatch(/^TIME\s+ACTION\s+ACTOR\s+SUBJECT\s+DETAILS$/);
    expect(lines.slice(2).filter((l) => /\skey\.revoke\s+admin \S+ \(audit test\)/.test(l))).toHaveLength(1);
    const installation = await run(['audit', ...flags]);
    expect(installation.stdout).toMatch(/installation audit entr/);
    expect(installation.stdout).toMatch(/admin_token\.rotate/);
    const wrong = await run(['audit', appA, '--action', 'admin_token.rotate', ...flags]);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/--action must be one of user\.erase/);
    for (const out of [json.stdout, human.stdout, installation.stdout]) {
      for (const secret of secrets) expect(out).not.toContain(secret);
    }
  }, 60_000);

  it('tally campaigns create warns on stderr when the app has no push provider, and still creates it', async () => {
    const token2 = secrets[secrets.length - 1]!;
    const flags = ['--url', server.url, '--admin-token', token2];
    const args = [
      'campaigns',
      'create',
      '--name',
      'N',
      '--title',
      'T',
      '--message',
      'M',
      '--schedule-type',
      'scheduled',
    ];
    const when = ['--scheduled-at', '2099-02-01T10:00:00Z', '--json', ...flags];
    const bare = await run([...args.slice(0, 2), appB, ...args.slice(2), ...when]);
    expect(bare.code).toBe(0);
    expect(bare.stderr).toMatch(/^tally: warning: app \S+ has no push provider configured/);
    const created = JSON.parse(bare.stdout);
    const listed = ok(
      await createTallyClient({ baseUrl: server.url, adminToken: token2 }).adminCampaignsList({
        path: { app_id: appB },
      }),
    );
    expect(listed.items.map((c) => c.id)).toContain(created.campaign_id);
    // an app with a provider gets no warning
    const configured = await run([...args.slice(0, 2), appA, ...args.slice(2), ...when]);
    expect(configured.code).toBe(0);
    expect(configured.stderr).toBe('');
  }, 60_000);
});
