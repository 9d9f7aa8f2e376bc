// Push delivery you can trust, the record and the devices: the delivery row is written `pending`
// before the provider is called and resolved after; Web Push 404/410 prunes the subscription, and
// users without a device are failed with that reason and counted apart. Retries and the sweeper are
// in push-delivery.test.ts; the shared set-up is in push-delivery-helpers.ts. This file's server is
// on a database of its own, so its delivery worker never takes the other file's runs.
import { describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { type FakeSubscription, startFakeOneSignal, startFakeWebPushService } from '../helpers/fake-push.js';
import { OS_APP, OS_KEY } from '../helpers/push-setup.js';
import { db, delivery, oneSignal, send, setUpDeliveryServer, tenantWith } from './push-delivery-helpers.js';

setUpDeliveryServer({ ownDatabase: 'tally_push_records' });

describe('no push without a record', () => {
  it('writes the delivery pending before the provider answers, and resolves it after', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const os = await startFakeOneSignal({
      appId: OS_APP,
      restApiKey: OS_KEY,
      subscribedExternalIds: 'all',
      hold: () => held,
    });
    try {
      const tenant = await tenantWith(oneSignal(os.baseUrl), 'u1');
      const sending = send(tenant, 'u1');
      while (os.requests.length === 0) await new Promise((r) => setTimeout(r, 20));
      // the provider has the request and has not answered: the row exists, pending
      const key = os.requests[0]!.body.idempotency_key;
      expect(await delivery(key)).toMatchObject({ status: 'pending', app_id: tenant.app.id });
      release();
      const sent = await sending;
      expect(sent.data?.deliveryId).toBe(key);
      expect(await delivery(key)).toMatchObject({ status: 'delivered', attempts: 1 });
    } finally {
      release();
      await os.close();
    }
  });
});

describe('subscription hygiene', () => {
  it('prunes a Web Push subscription answering 410, then fails the user as having no device; counted apart', async () => {
    const service = await startFakeWebPushService();
    try {
      const tenant = await tenantWith({ provider: 'webpush', vapid_subject: 'mailto:ops@example.com' }, 'b1');
      const user = await db()('users').where({ app_id: tenant.app.id, external_id: 'b1' }).first();
      const gone: FakeSubscription = service.subscribe(410);
      await db()('push_subscriptions').insert({
        id: uuidv7(),
        app_id: tenant.app.id,
        user_id: user.id,
        endpoint: gone.endpoint,
        p256dh: gone.p256dh,
        auth: gone.auth,
      });
      const first = await send(tenant, 'b1');
      expect(first.response.status).toBe(502);
      expect(service.problems).toEqual([]);
      expect(Number((await db()('push_subscriptions').where({ app_id: tenant.app.id }).count('* as n'))[0]!.n)).toBe(0);
      const second = await send(tenant, 'b1');
      expect(second.response.status).toBe(502);
      const rows = await db()('push_deliveries').where({ app_id: tenant.app.id }).orderBy('created_at');
      expect(rows.map((r) => [r.status, r.failure_kind, r.attempts])).toEqual([
        ['failed', 'subscription_gone', 1],
        ['failed', 'no_device', 1],
      ]);
      const [a, b] = await Promise.all(
        rows.map((r) => tenant.client.pushCampaignStatus({ path: { campaign_id: r.id } })),
      );
      expect(a!.data!.stats).toMatchObject({ failed: 1, subscription_gone: 1, no_device: 0 });
      expect(b!.data!.stats).toMatchObject({ failed: 1, subscription_gone: 0, no_device: 1 });
    } finally {
      await service.close();
    }
  });

  it('fails a OneSignal user without a subscribed device with that reason (not retried)', async () => {
    const os = await startFakeOneSignal({ appId: OS_APP, restApiKey: OS_KEY, subscribedExternalIds: [] });
    try {
      const tenant = await tenantWith(oneSignal(os.baseUrl), 'u1');
      const sent = await send(tenant, 'u1');
      expect(sent.response.status).toBe(502);
      expect(os.requests).toHaveLength(1);
      const row = await db()('push_deliveries').where({ app_id: tenant.app.id }).first();
      expect(row).toMatchObject({ status: 'failed', failure_kind: 'no_device' });
      expect(row.error).toMatch(/no subscribed device/);
    } finally {
      await os.close();
    }
  });
});
