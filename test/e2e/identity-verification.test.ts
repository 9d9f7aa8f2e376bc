// Identity verification of website visitors (POST /v1/website/identify with user_hash): identity
// secrets through the admin API (encrypted at rest, at most two for rotation), valid and wrong
// hashes, what an unverified browser may and may not reach, and the account takeover of issue 12
// (a forged Origin renaming a user the backend created) refused.
import { createHmac } from 'node:crypto';
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const SITE = 'https://shop.example';
const SECRET_KEY = 'identity-verification-secret-key-0123';
let server: TestServer;
let admin: TallyClient;
let web: TallyClient;

beforeAll(async () => {
  server = await startTestServer({ SECRET_KEY, PUSH_ENDPOINT_ALLOWLIST: 'push.example' });
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
  web = server.clientFor();
});
afterAll(() => server?.close());

const db = () => server.db.knex;
const hash = (secret: string, userId: string) => createHmac('sha256', secret).update(userId).digest('hex');
// A forged Origin is as easy as any other header outside a browser.
const from = { headers: { Origin: SITE } };

async function siteTenant(): Promise<Tenant> {
  const tenant = await server.createTenant();
  await updateApp(db(), tenant.app.id, { website_url: SITE });
  return tenant;
}

async function generate(appId: string) {
  const res = await admin.adminIdentitySecretsGenerate({ path: { app_id: appId } });
  expect(res.error).toBeUndefined();
  return res.data!;
}

const identify = (appId: string, visitorId: string, userId: string, userHash?: string) =>
  web.websiteIdentify({
    body: { app_id: appId, visitor_id: visitorId, user_id: userId, ...(userHash ? { user_hash: userHash } : {}) },
    ...from,
  });

/** A visitor with some anonymous history (a page-view-like event), created from the website. */
async function anonymousVisitor(appId: string, visitorId: string) {
  const res = await web.websiteTrackEvent({
    body: { app_id: appId, visitor_id: visitorId, event_name: 'browse' },
    ...from,
  });
  expect(res.response.status).toBe(200);
}

const user = (appId: string, externalId: string) =>
  db()('users').where({ app_id: appId, external_id: externalId }).first();
const eventsOf = async (appId: string, externalId: string) => {
  const u = await user(appId, externalId);
  return u ? db()('events').where({ app_id: appId, user_id: u.id }).pluck('event_name') : [];
};

describe('identity secrets (admin API)', () => {
  it('are generated once, listed without values, encrypted at rest, and at most two at a time', async () => {
    const t = await siteTenant();
    const first = await generate(t.app.id);
    expect(first).toMatchObject({
      success: true,
      secret: expect.stringMatching(/^tis_[\w-]{43}$/),
      secret_id: expect.any(String),
      created_at: expect.any(String),
    });
    expect(first.active.map((s) => s.secret_id)).toEqual([first.secret_id]);
    const second = await generate(t.app.id);
    expect(second.secret).not.toBe(first.secret);
    expect(second.active.map((s) => s.secret_id)).toEqual([first.secret_id, second.secret_id]);

    const third = await admin.adminIdentitySecretsGenerate({ path: { app_id: t.app.id } });
    expect(third.response.status).toBe(409);
    expect(third.error).toMatchObject({ code: 'CONFLICT' });

    const list = await admin.adminIdentitySecretsList({ path: { app_id: t.app.id } });
    expect(list.data!.items).toEqual([
      { secret_id: first.secret_id, created_at: first.created_at },
      { secret_id: second.secret_id, created_at: second.created_at },
    ]);
    expect(JSON.stringify(list.data)).not.toContain(first.secret);
    const stored = await db()('app_identity_secrets').where({ app_id: t.app.id }).pluck('secret');
    expect(stored).toHaveLength(2);
    for (const value of stored) {
      expect(value).toMatch(/^v1:/);
      expect(value).not.toContain(first.secret);
      expect(value).not.toContain(second.secret);
    }
  });

  it('answer 404 for an unknown app or secret, and 400 on PostgreSQL without SECRET_KEY', async () => {
    const t = await siteTenant();
    const unknownApp = await admin.adminIdentitySecretsGenerate({
      path: { app_id: '0190f0f0-0000-7000-8000-000000000000' },
    });
    expect(unknownApp.response.status).toBe(404);
    for (const secretId of ['0190f0f0-0000-7000-8000-000000000000', 'not-a-uuid']) {
      const gone = await admin.adminIdentitySecretsRemove({ path: { app_id: t.app.id, secret_id: secretId } });
      expect(gone.response.status).toBe(404);
    }
    // A secret of another app cannot be removed through this one.
    const other = await siteTenant();
    const foreign = await generate(other.app.id);
    const cross = await admin.adminIdentitySecretsRemove({
      path: { app_id: t.app.id, secret_id: foreign.secret_id },
    });
    expect(cross.response.status).toBe(404);

    // Embedded installations generate a SECRET_KEY; PostgreSQL ones need the operator's.
    if (inject('database').kind !== 'postgres') return;
    const bare = await startTestServer({}, { database: server.db });
    try {
      const noKey = createTallyClient({ baseUrl: bare.url, adminToken: bare.config.adminToken });
      const refused = await noKey.adminIdentitySecretsGenerate({ path: { app_id: t.app.id } });
      expect(refused.response.status).toBe(400);
      expect(refused.error).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('SECRET_KEY') });
    } finally {
      await bare.close();
    }
  });
});

describe('identify with a user_hash', () => {
  it('links a visitor to a user the backend created when the hash is valid', async () => {
    const t = await siteTenant();
    const { secret } = await generate(t.app.id);
    await t.client.usersUpsert({ body: { user_id: 'cust-1', email: 'c1@example.com' } });
    await t.client.eventsTrack({ body: { event_name: 'purchase', user_id: 'cust-1' } });
    await anonymousVisitor(t.app.id, 'visitor-1');
    const res = await identify(t.app.id, 'visitor-1', 'cust-1', hash(secret, 'cust-1'));
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual({ success: true, user_id: 'cust-1' });
    expect((await eventsOf(t.app.id, 'cust-1')).sort()).toEqual(['browse', 'purchase']);
    expect(await user(t.app.id, 'visitor-1')).toBeUndefined();
  });

  it('refuses a wrong hash with 403 IDENTITY_NOT_VERIFIED and changes nothing', async () => {
    const t = await siteTenant();
    const { secret } = await generate(t.app.id);
    await t.client.usersUpsert({ body: { user_id: 'cust-2' } });
    await anonymousVisitor(t.app.id, 'visitor-2');
    for (const wrong of [
      hash(secret, 'cust-3'), // another user's hash
      hash('not-the-secret', 'cust-2'),
      'f'.repeat(64),
      'not hex at all',
      hash(secret, 'cust-2').slice(0, 63),
    ]) {
      const res = await identify(t.app.id, 'visitor-2', 'cust-2', wrong);
      expect(res.response.status, wrong).toBe(403);
      expect(res.error).toMatchObject({ code: 'IDENTITY_NOT_VERIFIED' });
    }
    // Even onto a user the website created, a wrong hash is refused.
    await anonymousVisitor(t.app.id, 'web-user');
    const onto = await identify(t.app.id, 'visitor-2', 'web-user', hash(secret, 'someone-else'));
    expect(onto.response.status).toBe(403);
    expect(await eventsOf(t.app.id, 'visitor-2')).toEqual(['browse']);
    // An app without any secret verifies no hash at all.
    const bare = await siteTenant();
    await bare.client.usersUpsert({ body: { user_id: 'cust-2' } });
    const none = await identify(bare.app.id, 'visitor-2', 'cust-2', hash(secret, 'cust-2'));
    expect(none.response.status).toBe(403);
  });

  it('marks users it creates as verified, so an unverified browser cannot reach them later', async () => {
    const t = await siteTenant();
    const { secret } = await generate(t.app.id);
    await anonymousVisitor(t.app.id, 'visitor-v');
    expect((await identify(t.app.id, 'visitor-v', 'member-9', hash(secret, 'member-9'))).response.status).toBe(200);
    expect(await user(t.app.id, 'member-9')).toMatchObject({ created_via: 'website_verified' });
    await anonymousVisitor(t.app.id, 'visitor-w');
    const unverified = await identify(t.app.id, 'visitor-w', 'member-9');
    expect(unverified.response.status).toBe(403);
  });
});

describe('identify without a hash', () => {
  it('still links a visitor to a user created from the website', async () => {
    const t = await siteTenant();
    await generate(t.app.id);
    await anonymousVisitor(t.app.id, 'web-a');
    await anonymousVisitor(t.app.id, 'web-b');
    const res = await identify(t.app.id, 'web-b', 'web-a');
    expect(res.response.status).toBe(200);
    expect(await eventsOf(t.app.id, 'web-a')).toEqual(['browse', 'browse']);
    // A user created by a website form is a website user too.
    await web.websiteUpsertUser({ body: { appId: t.app.id, websiteUrl: SITE, email: 'form@example.com' }, ...from });
    expect((await identify(t.app.id, 'web-c', 'form@example.com')).response.status).toBe(200);
  });

  it('refuses to link to a user created through the REST API (users, events or aliases)', async () => {
    const t = await siteTenant();
    await t.client.usersUpsert({ body: { user_id: 'rest-user' } });
    await t.client.eventsTrack({ body: { event_name: 'signup', user_id: 'event-user' } });
    await t.client.usersCreateAlias({ body: { user_id: 'rest-user', alias_id: 'rest-alias' } });
    await anonymousVisitor(t.app.id, 'visitor-3');
    for (const target of ['rest-user', 'event-user', 'rest-alias']) {
      const res = await identify(t.app.id, 'visitor-3', target);
      expect(res.response.status, target).toBe(403);
      expect(res.error).toMatchObject({ code: 'IDENTITY_NOT_VERIFIED', message: expect.stringContaining('user_hash') });
    }
    expect(await eventsOf(t.app.id, 'visitor-3')).toEqual(['browse']);
    expect(await eventsOf(t.app.id, 'rest-user')).toEqual([]);
  });

  it('refuses the takeover of issue 12: a forged Origin renaming a REST user to an attacker id', async () => {
    const t = await siteTenant();
    await t.client.usersUpsert({ body: { user_id: 'cust-777', properties: { plan: 'gold' } } });
    const before = await user(t.app.id, 'cust-777');
    const res = await identify(t.app.id, 'cust-777', 'attacker-x');
    expect(res.response.status).toBe(403);
    expect(res.error).toMatchObject({ code: 'IDENTITY_NOT_VERIFIED' });
    expect(await user(t.app.id, 'cust-777')).toMatchObject({ id: before.id, external_id: 'cust-777' });
    expect(await user(t.app.id, 'attacker-x')).toBeUndefined();
    expect(await db()('user_aliases').where({ app_id: t.app.id, alias_id: 'cust-777' })).toEqual([]);
    // Later REST calls still reach the customer.
    const renamed = await t.client.usersReplaceId({ body: { user_id: 'cust-777', new_user_id: 'cust-777b' } });
    expect(renamed.response.status).toBe(200);
    // A visitor id that is an alias of a REST user is not a visitor either.
    await t.client.usersCreateAlias({ body: { user_id: 'cust-777b', alias_id: 'device-1' } });
    const viaAlias = await identify(t.app.id, 'device-1', 'attacker-y');
    expect(viaAlias.response.status).toBe(403);
    expect(await user(t.app.id, 'attacker-y')).toBeUndefined();
  });

  it('with a valid hash for the new user, a REST user as visitor id stays untouched (no merge)', async () => {
    const t = await siteTenant();
    const { secret } = await generate(t.app.id);
    await t.client.usersUpsert({ body: { user_id: 'cust-a' } });
    await t.client.eventsTrack({ body: { event_name: 'a', user_id: 'cust-a' } });
    await t.client.usersUpsert({ body: { user_id: 'cust-b' } });
    const res = await identify(t.app.id, 'cust-a', 'cust-b', hash(secret, 'cust-b'));
    expect(res.response.status).toBe(200);
    expect(await eventsOf(t.app.id, 'cust-a')).toEqual(['a']);
    expect(await eventsOf(t.app.id, 'cust-b')).toEqual([]);
  });
});

describe('rotation', () => {
  it('accepts hashes of either active secret, and refuses the old one once it is removed', async () => {
    const t = await siteTenant();
    await t.client.usersUpsert({ body: { user_id: 'cust-r' } });
    const old = await generate(t.app.id);
    const next = await generate(t.app.id);
    expect((await identify(t.app.id, 'v-old', 'cust-r', hash(old.secret, 'cust-r'))).response.status).toBe(200);
    expect((await identify(t.app.id, 'v-new', 'cust-r', hash(next.secret, 'cust-r'))).response.status).toBe(200);

    const removed = await admin.adminIdentitySecretsRemove({ path: { app_id: t.app.id, secret_id: old.secret_id } });
    expect(removed.data).toMatchObject({ success: true, secret_id: old.secret_id, removed: true });
    expect(removed.data!.active.map((s) => s.secret_id)).toEqual([next.secret_id]);
    const stale = await identify(t.app.id, 'v-old-2', 'cust-r', hash(old.secret, 'cust-r'));
    expect(stale.response.status).toBe(403);
    expect((await identify(t.app.id, 'v-new-2', 'cust-r', hash(next.secret, 'cust-r'))).response.status).toBe(200);
    // A third secret can be generated again.
    expect((await admin.adminIdentitySecretsGenerate({ path: { app_id: t.app.id } })).response.status).toBe(200);
  });
});

describe('push subscriptions of verified users', () => {
  const subscription = (n: number) => ({
    endpoint: `https://push.example/send/${n}`,
    keys: { p256dh: 'BPk-key', auth: 'auth-1' },
  });

  it("need the user's hash when the visitor id names a user the backend created", async () => {
    const t = await siteTenant();
    const { secret } = await generate(t.app.id);
    await t.client.usersUpsert({ body: { user_id: 'cust-p' } });
    const subscribe = (visitorId: string, n: number, userHash?: string) =>
      web.websiteSubscribePush({
        body: {
          app_id: t.app.id,
          visitor_id: visitorId,
          subscription: subscription(n),
          ...(userHash ? { user_hash: userHash } : {}),
        },
        ...from,
      });
    const refused = await subscribe('cust-p', 1);
    expect(refused.response.status).toBe(403);
    expect(refused.error).toMatchObject({ code: 'IDENTITY_NOT_VERIFIED' });
    expect((await subscribe('cust-p', 2, hash(secret, 'someone'))).response.status).toBe(403);
    expect(await db()('push_subscriptions').where({ app_id: t.app.id })).toEqual([]);

    const accepted = await subscribe('cust-p', 3, hash(secret, 'cust-p'));
    expect(accepted.response.status).toBe(200);
    const row = await db()('push_subscriptions').where({ app_id: t.app.id }).first();
    expect(row.user_id).toBe((await user(t.app.id, 'cust-p')).id);
    // An anonymous visitor needs no hash.
    expect((await subscribe('anon-p', 4)).response.status).toBe(200);
  });
});
