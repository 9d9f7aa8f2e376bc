// Push notifications through @tally/client: provider configuration (admin), POST /v1/sendpush in
// both forms, every status code, the exact outbound request of each adapter against local servers
// that speak the providers' APIs, delivery records, the tracked click redirect, and secrets.
import { createTallyClient, type TallyClient } from '@tally/client';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { seal } from '../../server/src/push/secrets.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import {
  type FakeSubscription,
  startFakeOneSignal,
  startFakeWebhook,
  startFakeWebPushService,
  startFakeWonderPush,
} from '../helpers/fake-push.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const SECRET_KEY = 'push-test-secret-key-0123456789-abcdefghij';
const WP_TOKEN = 'wp-access-token-SECRET-3f9a8b7c6d';
const OS_KEY = 'os_v2_app_rest-key-SECRET-88ab77cd';
const OS_APP = '5eb5a37e-b458-11e3-ac11-000c2940e62c';
const HOOK_SECRET = 'whsec-SECRET-0a1b2c3d4e5f';

let server: TestServer;
let admin: TallyClient;

beforeAll(async () => {
  server = await startTestServer({ SECRET_KEY });
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
});
afterAll(() => server?.close());

const db = () => server.db.knex;
const delivery = (id: string) => db()('push_deliveries').where({ id }).first();

async function tenantWithUser(externalId = 'user-1', on: TestServer = server): Promise<Tenant> {
  const tenant = await on.createTenant();
  const { error } = await tenant.client.usersUpsert({
    body: { user_id: externalId, email: `${externalId}@example.com` },
  });
  expect(error).toBeUndefined();
  return tenant;
}

async function configure(
  appId: string,
  body: Parameters<TallyClient['adminPushConfigure']>[0]['body'],
  client = admin,
) {
  const result = await client.adminPushConfigure({ path: { app_id: appId }, body });
  expect(result.error).toBeUndefined();
  return result.data!;
}

describe('AdminPush_configure / AdminPush_get', () => {
  it('stores a provider with its secrets encrypted and never returns them', async () => {
    const tenant = await server.createTenant();
    const none = await admin.adminPushGet({ path: { app_id: tenant.app.id } });
    expect(none.response.status).toBe(404);

    const saved = await configure(tenant.app.id, {
      provider: 'onesignal',
      onesignal_app_id: OS_APP,
      rest_api_key: OS_KEY,
      base_url: 'http://127.0.0.1:9/os',
    });
    expect(saved).toEqual({
      success: true,
      provider: 'onesignal',
      onesignal_app_id: OS_APP,
      base_url: 'http://127.0.0.1:9/os',
      configured_at: expect.any(String),
    });
    const got = await admin.adminPushGet({ path: { app_id: tenant.app.id } });
    expect(got.data).toEqual(saved);
    expect(JSON.stringify(got.data)).not.toContain(OS_KEY);

    const row = await db()('push_providers').where({ app_id: tenant.app.id }).first();
    const stored = JSON.stringify(row);
    expect(stored).not.toContain(OS_KEY);
    expect(stored).not.toContain(Buffer.from(OS_KEY).toString('base64'));
    expect(row.secrets).toMatch(/^v1:[\w-]+:[\w-]+:[\w-]+$/);

    // Replacing the provider replaces the whole configuration.
    const hook = await configure(tenant.app.id, {
      provider: 'webhook',
      webhook_url: 'https://hooks.example.com/push',
      webhook_secret: HOOK_SECRET,
    });
    expect(hook).toEqual({
      success: true,
      provider: 'webhook',
      webhook_url: 'https://hooks.example.com/push',
      configured_at: expect.any(String),
    });
    const after = await db()('push_providers').where({ app_id: tenant.app.id }).first();
    expect(JSON.stringify(after)).not.toContain(HOOK_SECRET);
  });

  it('refuses a missing or foreign field, a bad VAPID subject, and an unknown app', async () => {
    const tenant = await server.createTenant();
    const missing = await admin.adminPushConfigure({
      path: { app_id: tenant.app.id },
      body: { provider: 'wonderpush' },
    });
    expect(missing.response.status).toBe(400);
    expect(missing.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { errors: [{ path: '/body/access_token' }] },
    });

    const foreign = await admin.adminPushConfigure({
      path: { app_id: tenant.app.id },
      body: { provider: 'wonderpush', access_token: WP_TOKEN, rest_api_key: OS_KEY },
    });
    expect(foreign.response.status).toBe(400);
    expect(foreign.error).toMatchObject({ details: { errors: [{ path: '/body/rest_api_key' }] } });

    const subject = await admin.adminPushConfigure({
      path: { app_id: tenant.app.id },
      body: { provider: 'webpush', vapid_subject: 'ops@example.com' },
    });
    expect(subject.response.status).toBe(400);
    expect(subject.error).toMatchObject({ details: { errors: [{ path: '/body/vapid_subject' }] } });

    const unknown = await admin.adminPushConfigure({
      path: { app_id: uuidv7() },
      body: { provider: 'wonderpush', access_token: WP_TOKEN },
    });
    expect(unknown.response.status).toBe(404);
    expect((await admin.adminPushGet({ path: { app_id: 'not-a-uuid' } })).response.status).toBe(404);
  });

  it('generates VAPID keys for webpush and keeps them when the provider is configured again', async () => {
    const tenant = await server.createTenant();
    const first = await configure(tenant.app.id, { provider: 'webpush', vapid_subject: 'mailto:ops@example.com' });
    expect(first.provider).toBe('webpush');
    expect(first.vapid_subject).toBe('mailto:ops@example.com');
    const key = Buffer.from(first.webpush_public_key!, 'base64url');
    expect(key.length).toBe(65);
    expect(key[0]).toBe(4);
    const again = await configure(tenant.app.id, { provider: 'webpush', vapid_subject: 'https://example.com/contact' });
    expect(again.webpush_public_key).toBe(first.webpush_public_key);
    expect(again.vapid_subject).toBe('https://example.com/contact');
    const row = await db()('push_providers').where({ app_id: tenant.app.id }).first();
    expect(Object.keys(row.settings).sort()).toEqual(['vapid_public_key', 'vapid_subject']);
  });

  it('refuses to store secrets while SECRET_KEY is unset', async () => {
    const bare = await startTestServer();
    try {
      const tenant = await bare.createTenant();
      const client = createTallyClient({ baseUrl: bare.url, adminToken: bare.config.adminToken });
      const result = await client.adminPushConfigure({
        path: { app_id: tenant.app.id },
        body: { provider: 'wonderpush', access_token: WP_TOKEN },
      });
      expect(result.response.status).toBe(400);
      expect(result.error?.message).toContain('SECRET_KEY');
      expect(await bare.db.knex('push_providers').where({ app_id: tenant.app.id }).first()).toBeUndefined();
    } finally {
      await bare.close();
    }
  });
});

describe('POST /v1/sendpush: refusals', () => {
  it('answers 400 for message and prompt together or neither, a long title and a large max_characters', async () => {
    const tenant = await tenantWithUser();
    const neither = await tenant.client.pushSend({ body: { user_id: 'user-1', title: 'Hi' } });
    expect(neither.response.status).toBe(400);
    expect(neither.error).toMatchObject({ code: 'INVALID_REQUEST', details: { errors: [{ path: '/body/message' }] } });
    const both = await tenant.client.pushSend({ body: { user_id: 'user-1', title: 'Hi', message: 'a', prompt: 'b' } });
    expect(both.response.status).toBe(400);
    expect(both.error).toMatchObject({ details: { errors: [{ path: '/body/prompt' }] } });
    const title = await tenant.client.pushSend({ body: { user_id: 'user-1', title: 'x'.repeat(256), message: 'a' } });
    expect(title.response.status).toBe(400);
    expect(title.error).toMatchObject({ details: { errors: [{ path: '/body/title' }] } });
    const max = await tenant.client.pushSend({
      body: { user_id: 'user-1', title: 'Hi', prompt: 'p', max_characters: 501 },
    });
    expect(max.response.status).toBe(400);
    expect(max.error).toMatchObject({ details: { errors: [{ path: '/body/max_characters' }] } });
  });

  it('answers 400 PUSH_NOT_CONFIGURED without a provider and 404 for an unknown user', async () => {
    const tenant = await tenantWithUser();
    const unconfigured = await tenant.client.pushSend({ body: { user_id: 'user-1', title: 'Hi', message: 'Hello' } });
    expect(unconfigured.response.status).toBe(400);
    expect(unconfigured.error).toMatchObject({ code: 'PUSH_NOT_CONFIGURED' });
    const unknown = await tenant.client.pushSend({ body: { user_id: 'nobody', title: 'Hi', message: 'Hello' } });
    expect(unknown.response.status).toBe(404);
    expect(unknown.error).toMatchObject({ code: 'NOT_FOUND' });
    expect(await db()('push_deliveries').where({ app_id: tenant.app.id })).toHaveLength(0);
  });
});

describe('WonderPush', () => {
  it('sends a Management API delivery to the user (aliases resolve) with our tracked link', async () => {
    const wp = await startFakeWonderPush({ accessToken: WP_TOKEN });
    try {
      const tenant = await tenantWithUser('wp-user');
      await tenant.client.usersCreateAlias({ body: { user_id: 'wp-user', alias_id: 'device-9' } });
      await configure(tenant.app.id, { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl });

      const sent = await tenant.client.pushSend({
        body: {
          user_id: 'device-9',
          title: 'Your cart',
          message: 'Still there!',
          action_url: 'https://shop.example.com/cart?x=1',
        },
      });
      expect(sent.error).toBeUndefined();
      expect(sent.data).toEqual({
        success: true,
        message: expect.any(String),
        deliveryId: expect.any(String),
        recipientCount: 1,
      });
      const id = sent.data!.deliveryId;
      expect(wp.requests).toHaveLength(1);
      const req = wp.requests[0]!;
      expect(req.method).toBe('POST');
      expect(req.url.pathname).toBe('/v1/deliveries');
      expect(req.url.searchParams.get('accessToken')).toBe(WP_TOKEN);
      expect(req.body).toEqual({
        targetUserIds: ['wp-user'],
        notification: {
          alert: { title: 'Your cart', text: 'Still there!' },
          targetUrl: `${server.url}/v1/r/${id}`,
        },
      });
      expect(await delivery(id)).toMatchObject({
        app_id: tenant.app.id,
        provider: 'wonderpush',
        provider_message_id: 'wp-notif-1',
        status: 'delivered',
        title: 'Your cart',
        message: 'Still there!',
        action_url: 'https://shop.example.com/cart?x=1',
        campaign_id: null,
        error: null,
        clicked_at: null,
      });
    } finally {
      await wp.close();
    }
  });

  it('answers 502 PROVIDER_ERROR when WonderPush refuses, records a failed delivery, and never echoes the token', async () => {
    const wp = await startFakeWonderPush({ accessToken: 'the-right-token' });
    try {
      const tenant = await tenantWithUser('wp-user');
      await configure(tenant.app.id, { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl });
      const refused = await tenant.client.pushSend({ body: { user_id: 'wp-user', title: 'Hi', message: 'Hello' } });
      expect(refused.response.status).toBe(502);
      expect(refused.error).toMatchObject({
        code: 'PROVIDER_ERROR',
        details: { provider: 'wonderpush', status: 403, reason: 'Invalid access token' },
      });
      expect(JSON.stringify(refused.error)).not.toContain(WP_TOKEN);
      const rows = await db()('push_deliveries').where({ app_id: tenant.app.id });
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 'failed', provider_message_id: null, recipients: 0 });
      expect(rows[0].error).toContain('Invalid access token');
    } finally {
      await wp.close();
    }
  });

  it('answers 502 with a null status when the provider cannot be reached', async () => {
    const wp = await startFakeWonderPush({ accessToken: WP_TOKEN });
    await wp.close();
    const tenant = await tenantWithUser('wp-user');
    await configure(tenant.app.id, { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl });
    const down = await tenant.client.pushSend({ body: { user_id: 'wp-user', title: 'Hi', message: 'Hello' } });
    expect(down.response.status).toBe(502);
    expect(down.error).toMatchObject({ code: 'PROVIDER_ERROR', details: { provider: 'wonderpush', status: null } });
    expect((down.error!.details as { reason: string }).reason).not.toContain(WP_TOKEN);
  });
  it('answers 500 without calling the provider when the stored secrets no longer open (SECRET_KEY changed)', async () => {
    const wp = await startFakeWonderPush({ accessToken: WP_TOKEN });
    try {
      const tenant = await tenantWithUser('wp-user');
      await configure(tenant.app.id, { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl });
      await db()('push_providers')
        .where({ app_id: tenant.app.id })
        .update({
          secrets: seal('a-different-secret-key-than-the-servers', tenant.app.id, { access_token: WP_TOKEN }),
        });
      const result = await tenant.client.pushSend({ body: { user_id: 'wp-user', title: 'Hi', message: 'Hello' } });
      expect(result.response.status).toBe(500);
      expect(result.error?.message).toContain('SECRET_KEY');
      expect(wp.requests).toHaveLength(0);
    } finally {
      await wp.close();
    }
  });
});

describe('click tracking: GET /v1/r/{deliveryId}', () => {
  it('records the first click and redirects (302) to the action URL; unknown ids are 404', async () => {
    const wp = await startFakeWonderPush({ accessToken: WP_TOKEN });
    try {
      const tenant = await tenantWithUser('clicker');
      await configure(tenant.app.id, { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl });
      const target = 'myapp://orders/42?ref=push';
      const { data } = await tenant.client.pushSend({
        body: { user_id: 'clicker', title: 'Order', message: 'Shipped', action_url: target },
      });
      const anonymous = createTallyClient({ baseUrl: server.url });
      const click = await anonymous.pushClick({ path: { deliveryId: data!.deliveryId }, redirect: 'manual' });
      expect(click.response.status).toBe(302);
      expect(click.response.headers.get('location')).toBe(target);
      const first = (await delivery(data!.deliveryId)).clicked_at;
      expect(first).toBeInstanceOf(Date);
      const again = await anonymous.pushClick({ path: { deliveryId: data!.deliveryId }, redirect: 'manual' });
      expect(again.response.status).toBe(302);
      expect((await delivery(data!.deliveryId)).clicked_at).toEqual(first);

      expect((await anonymous.pushClick({ path: { deliveryId: uuidv7() }, redirect: 'manual' })).response.status).toBe(
        404,
      );
      const junk = await anonymous.pushClick({ path: { deliveryId: 'not-a-delivery' }, redirect: 'manual' });
      expect(junk.response.status).toBe(404);
      expect(junk.error).toMatchObject({ code: 'NOT_FOUND' });

      // Without an action URL there is no link to follow.
      const bare = await tenant.client.pushSend({ body: { user_id: 'clicker', title: 'Hi', message: 'No link' } });
      expect(wp.requests.at(-1)!.body.notification.targetUrl).toBeUndefined();
      const noLink = await anonymous.pushClick({ path: { deliveryId: bare.data!.deliveryId }, redirect: 'manual' });
      expect(noLink.response.status).toBe(404);
    } finally {
      await wp.close();
    }
  });
});

describe('OneSignal', () => {
  it('creates a notification targeted by external id on the push channel', async () => {
    const os = await startFakeOneSignal({ appId: OS_APP, restApiKey: OS_KEY, subscribedExternalIds: ['os-user'] });
    try {
      const tenant = await tenantWithUser('os-user');
      await configure(tenant.app.id, {
        provider: 'onesignal',
        onesignal_app_id: OS_APP,
        rest_api_key: OS_KEY,
        base_url: os.baseUrl,
      });
      const sent = await tenant.client.pushSend({
        body: {
          user_id: 'os-user',
          title: 'Sale',
          message: '20% off today',
          action_url: 'https://shop.example.com/sale',
        },
      });
      expect(sent.error).toBeUndefined();
      const req = os.requests[0]!;
      expect(req.url.pathname).toBe('/notifications');
      expect(req.headers.authorization).toBe(`Key ${OS_KEY}`);
      expect(req.headers['content-type']).toContain('application/json');
      expect(req.body).toEqual({
        app_id: OS_APP,
        include_aliases: { external_id: ['os-user'] },
        target_channel: 'push',
        headings: { en: 'Sale' },
        contents: { en: '20% off today' },
        url: `${server.url}/v1/r/${sent.data!.deliveryId}`,
        data: { tally_delivery_id: sent.data!.deliveryId },
      });
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({
        provider: 'onesignal',
        provider_message_id: 'os-1-8f6c2e2a',
        status: 'delivered',
      });
    } finally {
      await os.close();
    }
  });

  it('treats a 200 carrying errors and an empty id as a refusal (502) and a failed delivery', async () => {
    const os = await startFakeOneSignal({ appId: OS_APP, restApiKey: OS_KEY, subscribedExternalIds: [] });
    try {
      const tenant = await tenantWithUser('os-user');
      await configure(tenant.app.id, {
        provider: 'onesignal',
        onesignal_app_id: OS_APP,
        rest_api_key: OS_KEY,
        base_url: os.baseUrl,
      });
      const refused = await tenant.client.pushSend({ body: { user_id: 'os-user', title: 'Sale', message: 'Hi' } });
      expect(os.requests).toHaveLength(1);
      expect(refused.response.status).toBe(502);
      expect(refused.error).toMatchObject({
        code: 'PROVIDER_ERROR',
        details: { provider: 'onesignal', status: 200, reason: 'All included players are not subscribed' },
      });
      const [row] = await db()('push_deliveries').where({ app_id: tenant.app.id });
      expect(row).toMatchObject({ status: 'failed', provider: 'onesignal' });
    } finally {
      await os.close();
    }
  });
});

describe('webhook', () => {
  it('posts a signed JSON body that the receiver verifies', async () => {
    const hook = await startFakeWebhook({ secret: HOOK_SECRET });
    try {
      const tenant = await tenantWithUser('hook-user');
      await configure(tenant.app.id, {
        provider: 'webhook',
        webhook_url: `${hook.baseUrl}/tally`,
        webhook_secret: HOOK_SECRET,
      });
      const sent = await tenant.client.pushSend({
        body: { user_id: 'hook-user', title: 'Ping', message: 'Pong', action_url: 'https://example.com/p' },
      });
      expect(sent.error).toBeUndefined();
      expect(hook.requests).toHaveLength(1);
      expect(hook.requests[0]!.url.pathname).toBe('/tally');
      expect(hook.verified).toEqual([
        {
          delivery_id: sent.data!.deliveryId,
          app_id: tenant.app.id,
          user_id: 'hook-user',
          title: 'Ping',
          message: 'Pong',
          action_url: `${server.url}/v1/r/${sent.data!.deliveryId}`,
          timestamp: expect.any(Number),
        },
      ]);
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({ status: 'delivered', provider_message_id: 'wh-1' });
    } finally {
      await hook.close();
    }
  });

  it('a receiver that fails is a 502 with its status; a wrong secret is refused by the receiver', async () => {
    const down = await startFakeWebhook({ secret: HOOK_SECRET, status: 503 });
    const strict = await startFakeWebhook({ secret: 'another-secret' });
    try {
      const tenant = await tenantWithUser('hook-user');
      await configure(tenant.app.id, { provider: 'webhook', webhook_url: down.baseUrl, webhook_secret: HOOK_SECRET });
      const failed = await tenant.client.pushSend({ body: { user_id: 'hook-user', title: 'Ping', message: 'Pong' } });
      expect(failed.error).toMatchObject({ code: 'PROVIDER_ERROR', details: { provider: 'webhook', status: 503 } });
      await configure(tenant.app.id, { provider: 'webhook', webhook_url: strict.baseUrl, webhook_secret: HOOK_SECRET });
      const unsigned = await tenant.client.pushSend({ body: { user_id: 'hook-user', title: 'Ping', message: 'Pong' } });
      expect(unsigned.error).toMatchObject({ details: { provider: 'webhook', status: 401 } });
      expect(strict.verified).toHaveLength(0);
    } finally {
      await down.close();
      await strict.close();
    }
  });
});

describe('Web Push', () => {
  const insertSubscription = async (tenant: Tenant, externalId: string, s: FakeSubscription) => {
    const user = await db()('users').where({ app_id: tenant.app.id, external_id: externalId }).first();
    await db()('push_subscriptions').insert({
      id: uuidv7(),
      app_id: tenant.app.id,
      user_id: user.id,
      endpoint: s.endpoint,
      p256dh: s.p256dh,
      auth: s.auth,
    });
  };

  it('sends a VAPID-signed aes128gcm message to each subscription and forgets the gone ones', async () => {
    const service = await startFakeWebPushService();
    try {
      const tenant = await tenantWithUser('browser-user');
      const config = await configure(tenant.app.id, { provider: 'webpush', vapid_subject: 'mailto:ops@example.com' });
      const live = service.subscribe(201);
      const gone = service.subscribe(410);
      await insertSubscription(tenant, 'browser-user', live);
      await insertSubscription(tenant, 'browser-user', gone);

      const sent = await tenant.client.pushSend({
        body: { user_id: 'browser-user', title: 'Hello', message: 'From the web', action_url: 'https://example.com/w' },
      });
      expect(service.problems).toEqual([]);
      expect(sent.error).toBeUndefined();
      expect(sent.data).toMatchObject({ success: true, recipientCount: 1 });
      expect(service.deliveries).toHaveLength(1);
      const d = service.deliveries[0]!;
      expect(d.subscriptionId).toBe(live.id);
      expect(d.vapidPublicKey).toBe(config.webpush_public_key);
      expect(d.claims).toMatchObject({ aud: service.baseUrl, sub: 'mailto:ops@example.com' });
      expect(d.payload).toEqual({
        title: 'Hello',
        body: 'From the web',
        url: `${server.url}/v1/r/${sent.data!.deliveryId}`,
        delivery_id: sent.data!.deliveryId,
      });
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({
        provider: 'webpush',
        status: 'delivered',
        provider_message_id: `${service.baseUrl}/message/${live.id}-1`,
      });
      const left = await db()('push_subscriptions').where({ app_id: tenant.app.id }).pluck('endpoint');
      expect(left).toEqual([live.endpoint]);
    } finally {
      await service.close();
    }
  });

  it('answers 502 when the user has no subscription, or every push service refuses', async () => {
    const service = await startFakeWebPushService();
    try {
      const tenant = await tenantWithUser('browser-user');
      await configure(tenant.app.id, { provider: 'webpush', vapid_subject: 'mailto:ops@example.com' });
      const none = await tenant.client.pushSend({ body: { user_id: 'browser-user', title: 'Hi', message: 'There' } });
      expect(none.response.status).toBe(502);
      expect(none.error).toMatchObject({ code: 'PROVIDER_ERROR', details: { provider: 'webpush', status: null } });

      await insertSubscription(tenant, 'browser-user', service.subscribe(429));
      const refused = await tenant.client.pushSend({
        body: { user_id: 'browser-user', title: 'Hi', message: 'There' },
      });
      expect(service.problems).toEqual([]);
      expect(refused.error).toMatchObject({ details: { provider: 'webpush', status: 429 } });
      const statuses = await db()('push_deliveries').where({ app_id: tenant.app.id }).pluck('status');
      expect(statuses).toEqual(['failed', 'failed']);
    } finally {
      await service.close();
    }
  });
});

describe('generated messages', () => {
  it('writes the text with the built-in composer when no LLM is configured, within max_characters', async () => {
    const hook = await startFakeWebhook({ secret: HOOK_SECRET });
    try {
      const tenant = await tenantWithUser('gen-user');
      await configure(tenant.app.id, { provider: 'webhook', webhook_url: hook.baseUrl, webhook_secret: HOOK_SECRET });
      const sent = await tenant.client.pushSend({
        body: { user_id: 'gen-user', title: 'Cart', prompt: 'Remind them gently that items are still in their cart' },
      });
      expect(sent.data).toMatchObject({ generatedMessage: 'Items are still in your cart.' });
      expect(hook.verified[0]!.message).toBe('Items are still in your cart.');
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({
        generated: true,
        message: 'Items are still in your cart.',
      });

      const short = await tenant.client.pushSend({
        body: {
          user_id: 'gen-user',
          title: 'Cart',
          prompt: 'Remind them gently that items are still in their cart',
          max_characters: 12,
        },
      });
      expect(short.data!.generatedMessage!.length).toBeLessThanOrEqual(12);
      expect(short.data!.generatedMessage!.length).toBeGreaterThan(0);
      expect(hook.verified[1]!.message).toBe(short.data!.generatedMessage);
    } finally {
      await hook.close();
    }
  });

  it('asks the configured LLM, enforces max_characters on its answer, and links with PUBLIC_BASE_URL', async () => {
    let answer = 'Your cart misses you! Come back and check out.';
    const llm = await startFakeOpenAi(() => answer);
    const hook = await startFakeWebhook({ secret: HOOK_SECRET });
    const withLlm = await startTestServer({
      SECRET_KEY,
      LLM_BASE_URL: llm.baseUrl,
      LLM_API_KEY: 'sk-test',
      PUBLIC_BASE_URL: 'https://push.example.com/',
    });
    try {
      const client = createTallyClient({ baseUrl: withLlm.url, adminToken: withLlm.config.adminToken });
      const tenant = await tenantWithUser('llm-user', withLlm);
      await configure(
        tenant.app.id,
        { provider: 'webhook', webhook_url: hook.baseUrl, webhook_secret: HOOK_SECRET },
        client,
      );

      const sent = await tenant.client.pushSend({
        body: {
          user_id: 'llm-user',
          title: 'Cart',
          prompt: 'Cart reminder, friendly',
          action_url: 'https://shop.example.com/c',
        },
      });
      expect(sent.data).toMatchObject({ generatedMessage: answer, recipientCount: 1 });
      expect(llm.requests).toHaveLength(1);
      expect(llm.requests[0]!.messages.at(-1)).toEqual({ role: 'user', content: 'Cart reminder, friendly' });
      expect(llm.requests[0]!.messages[0]!.content).toContain('150');
      expect(hook.verified[0]).toMatchObject({
        message: answer,
        action_url: `https://push.example.com/v1/r/${sent.data!.deliveryId}`,
      });

      answer = `${'Wonderful news about your order and everything else in it '.repeat(10)}end`;
      const cut = await tenant.client.pushSend({
        body: { user_id: 'llm-user', title: 'Cart', prompt: 'Long one', max_characters: 40 },
      });
      const text = cut.data!.generatedMessage!;
      expect(text.length).toBeLessThanOrEqual(40);
      expect(text.endsWith('…')).toBe(true);
      expect(answer.startsWith(text.slice(0, -1))).toBe(true);
      expect(hook.verified[1]!.message).toBe(text);

      // Whatever the model answers, the text sent is within the limit and never empty.
      await fc.assert(
        fc.asyncProperty(
          fc.string({ maxLength: 700, unit: 'grapheme' }),
          fc.integer({ min: 1, max: 500 }),
          async (a, max) => {
            answer = a;
            const r = await tenant.client.pushSend({
              body: { user_id: 'llm-user', title: 'T', prompt: 'Anything', max_characters: max },
            });
            expect(r.error).toBeUndefined();
            const g = r.data!.generatedMessage!;
            expect(g.length).toBeGreaterThan(0);
            expect(g.length).toBeLessThanOrEqual(max);
            expect(hook.verified.at(-1)!.message).toBe(g);
          },
        ),
        { numRuns: 12 },
      );
    } finally {
      await withLlm.close();
      await llm.close();
      await hook.close();
    }
  });
});
