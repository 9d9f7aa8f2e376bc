// Web Push subscription endpoints come from browsers: only https URLs of public push services are
// registered (POST /v1/website/push-subscriptions) and sent to, checked again at send time, unless
// PUSH_ENDPOINT_ALLOWLIST exempts the host; and a push service's reply never reaches the caller.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startFakeWebPushService } from '../helpers/fake-push.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const SITE = 'https://shop.example';
const SECRET_KEY = 'push-endpoint-rules-secret-key-012345';
const from = { headers: { Origin: SITE } };
let strict: TestServer; // no allowlist
let allowing: TestServer; // PUSH_ENDPOINT_ALLOWLIST=127.0.0.1/32
let service: Awaited<ReturnType<typeof startFakeWebPushService>>;

beforeAll(async () => {
  strict = await startTestServer({ SECRET_KEY });
  allowing = await startTestServer({ SECRET_KEY, PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1/32' }, { database: strict.db });
  service = await startFakeWebPushService();
});
afterAll(async () => {
  await allowing?.close();
  await strict?.close();
  await service?.close();
});

const db = () => strict.db.knex;

async function webPushApp(on: TestServer): Promise<{ tenant: Tenant; admin: TallyClient }> {
  const tenant = await on.createTenant();
  await updateApp(db(), tenant.app.id, { website_url: SITE });
  const admin = createTallyClient({ baseUrl: on.url, adminToken: on.config.adminToken });
  const configured = await admin.adminPushConfigure({
    path: { app_id: tenant.app.id },
    body: { provider: 'webpush', vapid_subject: 'mailto:ops@shop.example' },
  });
  expect(configured.error).toBeUndefined();
  return { tenant, admin };
}

function register(
  on: TestServer,
  appId: string,
  visitorId: string,
  endpoint: string,
  keys = { p256dh: 'k', auth: 'a' },
) {
  return on.clientFor().websiteSubscribePush({
    body: { app_id: appId, visitor_id: visitorId, subscription: { endpoint, keys } },
    ...from,
  });
}

/** A subscription row written directly, as if registered before the rules (or DNS) changed. */
async function storeSubscription(
  tenant: Tenant,
  externalId: string,
  endpoint: string,
  keys: { p256dh: string; auth: string },
) {
  const user = await db()('users').where({ app_id: tenant.app.id, external_id: externalId }).first();
  await db()('push_subscriptions').insert({ id: uuidv7(), app_id: tenant.app.id, user_id: user.id, endpoint, ...keys });
}

describe('registering a subscription', () => {
  it('refuses every endpoint that is not an https URL of a public host, and stores none of them', async () => {
    const { tenant } = await webPushApp(strict);
    const refused = [
      'http://push.example/send/1',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'https://127.0.0.1/send/1',
      'https://127.0.0.1:6379/',
      'https://10.0.0.8/send/1',
      'https://192.168.1.1/send/1',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::1]/send/1',
      'https://[::ffff:127.0.0.1]/send/1',
      'https://[fd00:ec2::254]/send/1',
      'https://localhost/send/1', // a name that resolves to 127.0.0.1
      `${service.baseUrl}/push/x`, // the local fake service, without the allowlist
    ];
    for (const endpoint of refused) {
      const res = await register(strict, tenant.app.id, 'visitor-1', endpoint);
      expect(res.response.status, endpoint).toBe(400);
      expect(res.error, endpoint).toMatchObject({
        code: 'INVALID_REQUEST',
        details: { errors: [expect.objectContaining({ path: '/body/subscription/endpoint' })] },
      });
    }
    expect(await db()('push_subscriptions').where({ app_id: tenant.app.id })).toEqual([]);
  });

  it('accepts an allowlisted local push service, over http, and delivers to it', async () => {
    const { tenant } = await webPushApp(allowing);
    const sub = service.subscribe(201);
    const res = await register(allowing, tenant.app.id, 'visitor-ok', sub.endpoint, {
      p256dh: sub.p256dh,
      auth: sub.auth,
    });
    expect(res.response.status).toBe(200);
    await tenant.client.usersUpsert({ body: { user_id: 'visitor-ok' } }); // exists already: only updated
    const sent = await allowing.clientFor(tenant.apiKey).pushSend({
      body: { user_id: 'visitor-ok', title: 'Hello', message: 'From an allowed host' },
    });
    expect(sent.error).toBeUndefined();
    expect(service.problems).toEqual([]);
    expect(service.deliveries.at(-1)).toMatchObject({ subscriptionId: sub.id, payload: { title: 'Hello' } });
  });
});

describe('sending', () => {
  it('checks the endpoint again and never contacts an internal address stored earlier', async () => {
    const { tenant } = await webPushApp(strict);
    await tenant.client.usersUpsert({ body: { user_id: 'old-subscriber' } });
    const sub = service.subscribe(201);
    await storeSubscription(tenant, 'old-subscriber', sub.endpoint, { p256dh: sub.p256dh, auth: sub.auth });
    const before = service.requests.length;
    const sent = await tenant.client.pushSend({ body: { user_id: 'old-subscriber', title: 'Hi', message: 'There' } });
    expect(sent.response.status).toBe(502);
    expect(sent.error).toMatchObject({
      code: 'PROVIDER_ERROR',
      details: { provider: 'webpush', status: null, reason: expect.stringContaining('refused') },
    });
    expect(service.requests.length).toBe(before);
  });

  it("never passes a push service's reply on to the caller, nor into the delivery record", async () => {
    const marker = 'INTERNAL-ANSWER-7f3c: redis_version:7.2.4 requirepass=hunter2';
    const echo = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(marker);
      });
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    try {
      const { tenant } = await webPushApp(allowing);
      const { p256dh, auth } = service.subscribe(201);
      const keys = { p256dh, auth };
      const endpoint = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/anything`;
      expect((await register(allowing, tenant.app.id, 'echo-user', endpoint, keys)).response.status).toBe(200);
      await tenant.client.usersUpsert({ body: { user_id: 'echo-user' } });
      const sent = await allowing.clientFor(tenant.apiKey).pushSend({
        body: { user_id: 'echo-user', title: 'Hi', message: 'There' },
      });
      expect(sent.response.status).toBe(502);
      expect(sent.error).toMatchObject({ code: 'PROVIDER_ERROR', details: { provider: 'webpush', status: 400 } });
      const body = JSON.stringify(sent.error);
      expect(body).not.toContain('INTERNAL-ANSWER');
      expect(body).not.toContain('hunter2');
      const [row] = await db()('push_deliveries').where({ app_id: tenant.app.id });
      expect(row.status).toBe('failed');
      expect(row.error).not.toContain('INTERNAL-ANSWER');
    } finally {
      await new Promise<void>((r) => echo.close(() => r()));
    }
  });
});
