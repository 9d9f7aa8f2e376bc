import { describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { seal } from '../../server/src/secrets.js';
import {
  type FakeSubscription,
  startFakeOneSignal,
  startFakeWebhook,
  startFakeWebPushService,
  startFakeWonderPush,
} from '../helpers/fake-push.js';
import {
  configure,
  db,
  delivery,
  HOOK_SECRET,
  OS_APP,
  OS_KEY,
  push,
  tenantWithUser,
  usePushServer,
  WP_TOKEN,
} from '../helpers/push-setup.js';
import type { Tenant } from '../helpers/server.js';

usePushServer();

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
          targetUrl: `${push.server.url}/v1/r/${id}`,
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

  it("answers 502 PROVIDER_ERROR when WonderPush refuses, records a failed delivery, and never echoes the token or WonderPush's reply", async () => {
    const wp = await startFakeWonderPush({ accessToken: 'the-right-token' });
    try {
      const tenant = await tenantWithUser('wp-user');
      await configure(tenant.app.id, { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl });
      const refused = await tenant.client.pushSend({ body: { user_id: 'wp-user', title: 'Hi', message: 'Hello' } });
      expect(refused.response.status).toBe(502);
      expect(refused.error).toMatchObject({
        code: 'PROVIDER_ERROR',
        details: { provider: 'wonderpush', status: 403, reason: expect.stringContaining('refused the credentials') },
      });
      expect(JSON.stringify(refused.error)).not.toContain(WP_TOKEN);
      expect(JSON.stringify(refused.error)).not.toContain('Invalid access token');
      const rows = await db()('push_deliveries').where({ app_id: tenant.app.id });
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ status: 'failed', provider_message_id: null, recipients: 0 });
      expect(rows[0].error).toContain('refused the credentials');
      expect(rows[0].error).not.toContain('Invalid access token');
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
        url: `${push.server.url}/v1/r/${sent.data!.deliveryId}`,
        data: { tally_delivery_id: sent.data!.deliveryId },
        // a retry or a resend after a crash carries the same key: OneSignal sends it once
        idempotency_key: sent.data!.deliveryId,
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
        details: { provider: 'onesignal', status: 200, reason: expect.stringContaining('no subscribed device') },
      });
      expect(JSON.stringify(refused.error)).not.toContain('All included players');
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
          action_url: `${push.server.url}/v1/r/${sent.data!.deliveryId}`,
          timestamp: expect.any(Number),
        },
      ]);
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({ status: 'delivered', provider_message_id: 'wh-1' });
    } finally {
      await hook.close();
    }
  });

  it('a receiver that refuses is a 502 with its status; a wrong secret is refused by the receiver', async () => {
    // a 503 is retried in the background instead (push-delivery.test.ts); a 400 is final
    const down = await startFakeWebhook({ secret: HOOK_SECRET, status: 400 });
    const strict = await startFakeWebhook({ secret: 'another-secret' });
    try {
      const tenant = await tenantWithUser('hook-user');
      await configure(tenant.app.id, { provider: 'webhook', webhook_url: down.baseUrl, webhook_secret: HOOK_SECRET });
      const failed = await tenant.client.pushSend({ body: { user_id: 'hook-user', title: 'Ping', message: 'Pong' } });
      expect(failed.error).toMatchObject({ code: 'PROVIDER_ERROR', details: { provider: 'webhook', status: 400 } });
      expect(JSON.stringify(failed.error)).not.toContain('receiver is down');
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
        url: `${push.server.url}/v1/r/${sent.data!.deliveryId}`,
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

      // a 429 would be retried in the background (push-delivery.test.ts); a 403 is final
      await insertSubscription(tenant, 'browser-user', service.subscribe(403));
      const refused = await tenant.client.pushSend({
        body: { user_id: 'browser-user', title: 'Hi', message: 'There' },
      });
      expect(service.problems).toEqual([]);
      expect(refused.error).toMatchObject({ details: { provider: 'webpush', status: 403 } });
      const statuses = await db()('push_deliveries').where({ app_id: tenant.app.id }).pluck('status');
      expect(statuses).toEqual(['failed', 'failed']);
    } finally {
      await service.close();
    }
  });
});
