// Push notifications through @tally/client: provider configuration (admin), POST /v1/sendpush
// refusals and status codes, the tracked click redirect, and generated message text.
import { createTallyClient } from '@tally/client';
import fc from 'fast-check';
import { describe, expect, inject, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { startFakeOpenAi } from '../helpers/fake-openai.js';
import { startFakeWebhook, startFakeWonderPush } from '../helpers/fake-push.js';
import {
  configure,
  db,
  delivery,
  HOOK_SECRET,
  OS_APP,
  OS_KEY,
  push,
  SECRET_KEY,
  tenantWithUser,
  usePushServer,
  WP_TOKEN,
} from '../helpers/push-setup.js';
import { startTestServer } from '../helpers/server.js';

usePushServer();

describe('AdminPush_configure / AdminPush_get', () => {
  it('stores a provider with its secrets encrypted and never returns them', async () => {
    const tenant = await push.server.createTenant();
    const none = await push.admin.adminPushGet({ path: { app_id: tenant.app.id } });
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
    const got = await push.admin.adminPushGet({ path: { app_id: tenant.app.id } });
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
    const tenant = await push.server.createTenant();
    const missing = await push.admin.adminPushConfigure({
      path: { app_id: tenant.app.id },
      body: { provider: 'wonderpush' },
    });
    expect(missing.response.status).toBe(400);
    expect(missing.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { errors: [{ path: '/body/access_token' }] },
    });

    const foreign = await push.admin.adminPushConfigure({
      path: { app_id: tenant.app.id },
      body: { provider: 'wonderpush', access_token: WP_TOKEN, rest_api_key: OS_KEY },
    });
    expect(foreign.response.status).toBe(400);
    expect(foreign.error).toMatchObject({ details: { errors: [{ path: '/body/rest_api_key' }] } });

    const subject = await push.admin.adminPushConfigure({
      path: { app_id: tenant.app.id },
      body: { provider: 'webpush', vapid_subject: 'ops@example.com' },
    });
    expect(subject.response.status).toBe(400);
    expect(subject.error).toMatchObject({ details: { errors: [{ path: '/body/vapid_subject' }] } });

    const unknown = await push.admin.adminPushConfigure({
      path: { app_id: uuidv7() },
      body: { provider: 'wonderpush', access_token: WP_TOKEN },
    });
    expect(unknown.response.status).toBe(404);
    expect((await push.admin.adminPushGet({ path: { app_id: 'not-a-uuid' } })).response.status).toBe(404);
  });

  it('generates VAPID keys for webpush and keeps them when the provider is configured again', async () => {
    const tenant = await push.server.createTenant();
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

  // Embedded installations generate a SECRET_KEY (secret-key-file.test.ts); PostgreSQL ones need the operator's.
  it.runIf(inject('database').kind === 'postgres')(
    'refuses to store secrets on PostgreSQL while SECRET_KEY is unset',
    async () => {
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
    },
  );
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
      const anonymous = createTallyClient({ baseUrl: push.server.url });
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
