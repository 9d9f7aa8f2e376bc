// Push delivery you can trust, on the job runner: POST /v1/sendpush answers after the first attempt,
// and 429 and 5xx answers are retried by the delivery worker under the same idempotency key,
// honouring Retry-After (up to a minute); permanent refusals are recorded and not retried; the
// sweeper resends what a crash left pending under its key (OneSignal) or marks it unknown
// (WonderPush). The record written before the provider is called and subscription hygiene are in
// push-delivery-records.test.ts, crashes of real processes in push-crash.test.ts; the shared
// set-up is in push-delivery-helpers.ts.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { PUSH_SWEEP } from '../../server/src/jobs/index.js';
import { runJob } from '../helpers/campaigns.js';
import { startFakeOneSignal, startFakeWebhook, startFakeWonderPush } from '../helpers/fake-push.js';
import { HOOK_SECRET, OS_APP, OS_KEY, WP_TOKEN } from '../helpers/push-setup.js';
import type { Tenant } from '../helpers/server.js';
import {
  db,
  delivery,
  oneSignal,
  send,
  server,
  setUpDeliveryServer,
  tenantWith,
  wonderPush,
} from './push-delivery-helpers.js';

/**
 * While set, the server's clock stands still here (a millisecond further at each reading, so rows
 * keep their order) and only the test moves it; otherwise it is real time.
 */
let frozen: number | null = null;
function clock(): Date {
  if (frozen === null) return new Date();
  frozen += 1;
  return new Date(frozen);
}

// This server works the delivery worker's queue only (no campaign jobs), on a clock the retry
// tests stop and move.
setUpDeliveryServer({ clock });

// each run of the delivery worker waits for the job runner's next poll (2 s): generous time limits
describe('retries on the job runner', { timeout: 120_000 }, () => {
  // The server's clock stands still during these tests, so the wake-up a retry queues for itself
  // finds nothing due yet: the test moves the clock and runs the delivery worker, no sleeping.
  beforeEach(() => {
    frozen = Date.now();
  });
  afterEach(() => {
    frozen = null;
  });
  /** Moves the clock `ms` forward and runs the delivery worker once, awaited. */
  const later = async (ms: number) => {
    frozen! += ms;
    await runJob(server, PUSH_SWEEP);
  };
  const status = (tenant: Tenant, id: string) => tenant.client.pushCampaignStatus({ path: { campaign_id: id } });

  it('answers after the first attempt when OneSignal answers 503; the job runner sends it once, under the same key', async () => {
    let answered!: () => void;
    const responded = new Promise<void>((r) => {
      answered = r;
    });
    let calls = 0;
    const os = await startFakeOneSignal({
      appId: OS_APP,
      restApiKey: OS_KEY,
      subscribedExternalIds: 'all',
      // any second call is held until /sendpush has answered: a retry inside the request would hang it
      answer: async () => {
        calls += 1;
        if (calls === 1) return { status: 503, body: { errors: ['Service Unavailable'] } };
        await responded;
        return undefined;
      },
    });
    try {
      const tenant = await tenantWith(oneSignal(os.baseUrl), 'u1');
      const sent = await send(tenant, 'u1');
      answered();
      expect(sent.response.status).toBe(200);
      expect(os.requests).toHaveLength(1);
      const id = sent.data!.deliveryId;
      expect(sent.data).toMatchObject({ success: true, recipientCount: 0 });
      expect(sent.data!.message).toMatch(/HTTP 503.*retrying it in the background/);
      expect(sent.data!.message).toContain(`/v1/notifications/campaigns/${id}`);
      expect(await delivery(id)).toMatchObject({
        status: 'pending',
        attempts: 1,
        error: expect.stringMatching(/^503:/),
      });
      expect((await status(tenant, id)).data).toMatchObject({
        status: 'pending',
        completed_at: null,
        stats: { pending: 1, sent: 0 },
      });

      await later(999); // the first wait is half a second
      expect(os.requests).toHaveLength(2);
      expect(os.requests.map((r) => r.body.idempotency_key)).toEqual([id, id]);
      expect(os.sent).toHaveLength(1);
      expect(await delivery(id)).toMatchObject({ status: 'delivered', attempts: 2, error: null, recipients: 1 });
      expect((await status(tenant, id)).data).toMatchObject({
        status: 'completed',
        stats: { pending: 0, sent: 1, delivered: 1 },
      });
      await later(60_000); // nothing left to do: no third call
      expect(os.requests).toHaveLength(2);
    } finally {
      answered();
      await os.close();
    }
  });

  it("waits what a 429's Retry-After asks before the next attempt", async () => {
    let calls = 0;
    const os = await startFakeOneSignal({
      appId: OS_APP,
      restApiKey: OS_KEY,
      subscribedExternalIds: 'all',
      answer: () =>
        ++calls === 1 ? { status: 429, body: { errors: ['Rate limit'] }, headers: { 'retry-after': '20' } } : undefined,
    });
    try {
      const tenant = await tenantWith(oneSignal(os.baseUrl), 'u1');
      const sent = await send(tenant, 'u1');
      expect(sent.data).toMatchObject({ recipientCount: 0 });
      await later(19_000);
      expect(os.requests).toHaveLength(1);
      expect((await delivery(sent.data!.deliveryId)).status).toBe('pending');
      await later(1_000);
      expect(os.requests.map((r) => r.body.idempotency_key)).toEqual([sent.data!.deliveryId, sent.data!.deliveryId]);
      expect(os.sent).toHaveLength(1);
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({ status: 'delivered', attempts: 2 });
    } finally {
      await os.close();
    }
  });

  it('retries 500s from a provider with idempotency keys under the same key, with backoff', async () => {
    let calls = 0;
    const flaky = await startFakeOneSignal({
      appId: OS_APP,
      restApiKey: OS_KEY,
      subscribedExternalIds: 'all',
      answer: () => (++calls <= 2 ? { status: 500, body: { errors: ['Internal error'] } } : undefined),
    });
    try {
      const tenant = await tenantWith(oneSignal(flaky.baseUrl), 'u1');
      const sent = await send(tenant, 'u1');
      expect(sent.data).toMatchObject({ recipientCount: 0 });
      await later(500);
      expect(flaky.requests).toHaveLength(2);
      await later(500); // the second wait is a second
      expect(flaky.requests).toHaveLength(2);
      await later(500);
      expect(flaky.requests).toHaveLength(3);
      expect(new Set(flaky.requests.map((r) => r.body.idempotency_key))).toEqual(new Set([sent.data!.deliveryId]));
      expect(flaky.sent).toHaveLength(1);
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({ status: 'delivered', attempts: 3 });
    } finally {
      await flaky.close();
    }
  });

  it('fails the delivery when the provider still cannot take it after 4 calls', async () => {
    const os = await startFakeOneSignal({
      appId: OS_APP,
      restApiKey: OS_KEY,
      subscribedExternalIds: 'all',
      answer: () => ({ status: 503, body: { errors: ['Service Unavailable'] } }),
    });
    try {
      const tenant = await tenantWith(oneSignal(os.baseUrl), 'u1');
      const sent = await send(tenant, 'u1');
      for (let i = 0; i < 4; i++) await later(60_000); // three retries, then nothing left to try
      expect(os.requests).toHaveLength(4);
      const row = await delivery(sent.data!.deliveryId);
      expect(row).toMatchObject({ status: 'failed', attempts: 4, recipients: 0 });
      expect(row.error).toMatch(/^503: OneSignal failed on its side/);
      expect((await status(tenant, sent.data!.deliveryId)).data).toMatchObject({
        status: 'failed',
        stats: { failed: 1, pending: 0 },
      });
    } finally {
      await os.close();
    }
  });

  it('retries a webhook answering 503 under the same Idempotency-Key; the receiver delivers it once', async () => {
    let calls = 0;
    const hook = await startFakeWebhook({
      secret: HOOK_SECRET,
      answer: () => (++calls === 1 ? { status: 503, body: { error: 'busy' } } : undefined),
    });
    try {
      const tenant = await tenantWith(
        { provider: 'webhook', webhook_url: `${hook.baseUrl}/push`, webhook_secret: HOOK_SECRET },
        'u1',
      );
      const sent = await send(tenant, 'u1');
      expect(sent.data).toMatchObject({ recipientCount: 0 });
      await later(500);
      expect(hook.requests.map((r) => r.headers['idempotency-key'])).toEqual([
        sent.data!.deliveryId,
        sent.data!.deliveryId,
      ]);
      expect(hook.delivered).toHaveLength(1);
      // a crash after the receiver took it: the sweeper's resend carries the key, nothing new is delivered
      await db()('push_deliveries')
        .where({ id: sent.data!.deliveryId })
        .update({ status: 'pending', attempted_at: db().raw(`now() - interval '10 minutes'`) });
      await runJob(server, PUSH_SWEEP);
      expect(hook.requests).toHaveLength(3);
      expect(hook.delivered).toHaveLength(1);
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({ status: 'delivered', attempts: 3 });
    } finally {
      await hook.close();
    }
  });

  it('records a permanent refusal with its reason and does not retry it', async () => {
    const os = await startFakeOneSignal({
      appId: OS_APP,
      restApiKey: OS_KEY,
      subscribedExternalIds: 'all',
      answer: () => ({ status: 400, body: { errors: ['Message Notifications must have English language content'] } }),
    });
    try {
      const tenant = await tenantWith(oneSignal(os.baseUrl), 'u1');
      const sent = await send(tenant, 'u1');
      expect(sent.response.status).toBe(502);
      expect(sent.error).toMatchObject({ code: 'PROVIDER_ERROR', details: { provider: 'onesignal', status: 400 } });
      await later(60_000);
      expect(os.requests).toHaveLength(1);
      const row = await db()('push_deliveries').where({ app_id: tenant.app.id }).first();
      expect(row).toMatchObject({ status: 'failed', attempts: 1, failure_kind: null });
      expect(row.error).toMatch(/^400: OneSignal rejected the request as invalid/);
    } finally {
      await os.close();
    }
  });

  it('retries a 429 from WonderPush, but not a 500 (it has no idempotency key: the 500 may have sent it)', async () => {
    let calls = 0;
    const wp = await startFakeWonderPush({
      accessToken: WP_TOKEN,
      answer: () => {
        calls += 1;
        if (calls === 1) return { status: 429, body: { error: { status: 429 } }, headers: { 'retry-after': '1' } };
        if (calls === 3) return { status: 500, body: { error: { status: 500 } } };
        return undefined;
      },
    });
    try {
      const tenant = await tenantWith(wonderPush(wp.baseUrl), 'u1');
      const first = await send(tenant, 'u1');
      expect(first.data).toMatchObject({ recipientCount: 0 });
      await later(1_000);
      expect(wp.requests).toHaveLength(2);
      expect(wp.sent).toHaveLength(1);
      const second = await send(tenant, 'u1');
      expect(second.response.status).toBe(502);
      await later(60_000);
      expect(wp.requests).toHaveLength(3);
      const rows = await db()('push_deliveries').where({ app_id: tenant.app.id }).orderBy('created_at');
      expect(rows.map((r) => [r.status, r.attempts])).toEqual([
        ['delivered', 2],
        ['failed', 1],
      ]);
    } finally {
      await wp.close();
    }
  });

  it('does not wait for a Retry-After beyond a minute: the delivery fails with the reason', async () => {
    const os = await startFakeOneSignal({
      appId: OS_APP,
      restApiKey: OS_KEY,
      subscribedExternalIds: 'all',
      answer: () => ({ status: 429, body: { errors: ['Rate limit'] }, headers: { 'retry-after': '3600' } }),
    });
    try {
      const tenant = await tenantWith(oneSignal(os.baseUrl), 'u1');
      const sent = await send(tenant, 'u1');
      expect(sent.error).toMatchObject({ details: { status: 429 } });
      expect(os.requests).toHaveLength(1);
    } finally {
      await os.close();
    }
  });
});

describe('the sweeper', () => {
  /** Makes a delivery look like a crash left it: pending, its attempt ten minutes old. */
  const abandon = (id: string) =>
    db()('push_deliveries')
      .where({ id })
      .update({ status: 'pending', resolved_at: null, attempted_at: db().raw(`now() - interval '10 minutes'`) });

  const pendingRow = async (tenant: Tenant, user: string, provider: string) => {
    const u = await db()('users').where({ app_id: tenant.app.id, external_id: user }).first();
    const id = uuidv7();
    await db()('push_deliveries').insert({
      id,
      app_id: tenant.app.id,
      user_id: u.id,
      provider,
      title: 'Left',
      message: 'behind',
      generated: false,
      status: 'pending',
      recipients: 0,
      created_at: new Date(),
      attempted_at: db().raw(`now() - interval '10 minutes'`),
    });
    return id;
  };

  it('resends OneSignal deliveries left pending under their key: sent ones are not sent again', async () => {
    const os = await startFakeOneSignal({ appId: OS_APP, restApiKey: OS_KEY, subscribedExternalIds: 'all' });
    try {
      const tenant = await tenantWith(oneSignal(os.baseUrl), 'u1', 'u2');
      // u1: the provider sent it, the crash came before the answer was recorded
      const sent = await send(tenant, 'u1');
      await abandon(sent.data!.deliveryId);
      // u2: the crash came after the row was written, before the provider was called
      const never = await pendingRow(tenant, 'u2', 'onesignal');
      await runJob(server, PUSH_SWEEP);
      expect(os.sent.map((s) => s.externalIds)).toEqual([['u1'], ['u2']]);
      expect(os.requests.map((r) => r.body.idempotency_key)).toEqual([
        sent.data!.deliveryId,
        expect.any(String),
        expect.any(String),
      ]);
      expect(new Set(os.requests.slice(1).map((r) => r.body.idempotency_key))).toEqual(
        new Set([sent.data!.deliveryId, never]),
      );
      expect(await delivery(sent.data!.deliveryId)).toMatchObject({ status: 'delivered', attempts: 2 });
      expect(await delivery(never)).toMatchObject({ status: 'delivered' });
    } finally {
      await os.close();
    }
  });

  it('marks WonderPush deliveries left pending unknown, never resent, and reports them', async () => {
    const wp = await startFakeWonderPush({ accessToken: WP_TOKEN });
    try {
      const tenant = await tenantWith(wonderPush(wp.baseUrl), 'u1');
      const id = await pendingRow(tenant, 'u1', 'wonderpush');
      await runJob(server, PUSH_SWEEP);
      expect(wp.requests).toHaveLength(0);
      const row = await delivery(id);
      expect(row).toMatchObject({ status: 'unknown' });
      expect(row.error).toMatch(/no idempotency key/);
      const status = await tenant.client.pushCampaignStatus({ path: { campaign_id: id } });
      expect(status.data!.stats).toMatchObject({ total_recipients: 1, unknown: 1, pending: 0, sent: 0, failed: 0 });
      // a fresh pending row (an instance still waiting for its answer) is left alone
      const fresh = await pendingRow(tenant, 'u1', 'wonderpush');
      await db()('push_deliveries')
        .where({ id: fresh })
        .update({ attempted_at: db().raw('now()') });
      await runJob(server, PUSH_SWEEP);
      expect((await delivery(fresh)).status).toBe('pending');
      await db()('push_deliveries').where({ id: fresh }).delete();
    } finally {
      await wp.close();
    }
  });
});
