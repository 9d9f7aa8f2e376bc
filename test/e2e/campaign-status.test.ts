// A trigger campaign end to end on the real clock (the event in, the push out at a local
// WonderPush-speaking server), and GET /v1/notifications/campaigns/{id} for a campaign and for a
// /sendpush deliveryId, with counters and rates worked out by hand.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAMPAIGN_TICK } from '../../server/src/jobs/index.js';
import { runJob, wonderPush } from '../helpers/campaigns.js';
import { HOOK_SECRET, SECRET_KEY, WP_TOKEN } from '../helpers/push-setup.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let admin: TallyClient;

beforeAll(async () => {
  server = await startTestServer({ SECRET_KEY, PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1' });
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
});
afterAll(() => server?.close());

describe('trigger campaign end to end', () => {
  it('pushes after the triggering event is ingested', async () => {
    const wp = await wonderPush();
    try {
      const t = await server.createTenant();
      await admin.adminPushConfigure({
        path: { app_id: t.app.id },
        body: { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl },
      });
      await t.client.usersUpsert({ body: { user_id: 'shopper', properties: { first_name: 'Lee' } } });
      const created = await admin.adminCampaignsCreate({
        path: { app_id: t.app.id },
        body: {
          name: 'thanks',
          title: 'Thank you',
          message: 'Thanks for your order, {{first_name}}!',
          schedule_type: 'trigger',
          trigger_event_name: 'order_placed',
        },
      });
      expect(created.error).toBeUndefined();
      const started = Date.now();
      const tracked = await t.client.eventsTrack({ body: { user_id: 'shopper', event_name: 'order_placed' } });
      expect(tracked.error).toBeUndefined();
      // generous bound: the worker is woken after the commit, pg-boss polls every 2 s
      while (wp.calls.length === 0 && Date.now() - started < 60_000) await new Promise((r) => setTimeout(r, 25));
      const delay = Date.now() - started;
      expect(wp.calls).toHaveLength(1);
      expect(wp.calls[0]).toMatchObject({ users: ['shopper'], text: 'Thanks for your order, Lee!' });
      console.log(`trigger campaign: push received ${delay} ms after the event was sent (${server.db.kind})`);
    } finally {
      await wp.close();
    }
  });
});

/** A webhook receiver that accepts every push except those for `refuse`. */
async function receiver(refuse: string) {
  const seen: { user_id: string; action_url: string | null; delivery_id: string }[] = [];
  const s = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      seen.push(body);
      res.writeHead(body.user_id === refuse ? 500 : 200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`,
    seen,
    close: () => new Promise<void>((r) => s.close(() => r())),
  };
}

describe('GET /v1/notifications/campaigns/{campaign_id}', () => {
  it('reports a campaign and a /sendpush delivery, and nothing of another app', async () => {
    const hook = await receiver('carl');
    try {
      const t = await server.createTenant();
      await admin.adminPushConfigure({
        path: { app_id: t.app.id },
        body: { provider: 'webhook', webhook_url: hook.url, webhook_secret: HOOK_SECRET },
      });
      for (const id of ['ada', 'ben', 'carl']) await t.client.usersUpsert({ body: { user_id: id } });
      const created = await admin.adminCampaignsCreate({
        path: { app_id: t.app.id },
        body: {
          name: 'launch',
          title: 'New',
          message: 'Have a look',
          schedule_type: 'now',
          action_url: 'https://shop.example/new',
        },
      });
      const id = created.data!.campaign_id;
      const before = await t.client.pushCampaignStatus({ path: { campaign_id: id } });
      expect(before.data).toMatchObject({ status: 'pending', campaign_status: 'scheduled', sent_at: null });
      await runJob(server, CAMPAIGN_TICK);
      expect(hook.seen.map((s) => s.user_id).sort()).toEqual(['ada', 'ben', 'carl']);
      // ada opens the link, then buys within 24 hours (an event carrying revenue is a conversion)
      const ada = hook.seen.find((s) => s.user_id === 'ada')!;
      const click = await fetch(ada.action_url!, { redirect: 'manual' });
      expect(click.status).toBe(302);
      await t.client.eventsTrack({ body: { user_id: 'ada', event_name: 'purchase', properties: { revenue: 30 } } });

      const status = await t.client.pushCampaignStatus({ path: { campaign_id: id } });
      expect(status.error).toBeUndefined();
      // 3 attempted: 2 accepted (webhook 2xx = delivered), 1 refused; 1 click
      expect(status.data).toMatchObject({
        campaign_id: id,
        status: 'completed',
        campaign_status: 'sent',
        stats: { total_recipients: 3, sent: 2, delivered: 2, opened: 1, clicked: 1, failed: 1, pending: 0, unknown: 0 },
        rates: { delivery_rate: 1, open_rate: 0.5, click_rate: 0.5 },
      });
      expect(status.data!.sent_at).not.toBeNull();
      expect(status.data!.completed_at).not.toBeNull();
      // the MCP detail: percentages
      const detail = await admin.adminCampaignsGet({ path: { campaign_id: id } });
      expect(detail.data!.stats).toEqual({
        sent: 2,
        delivered: 2,
        clicked: 1,
        converted: 1,
        delivery_rate: 100,
        click_rate: 50,
        conversion_rate: 50,
      });
      expect(detail.data!.performance.best_performing_segment).toBe('all users');
      expect(detail.data!.performance.avg_delivery_time).toMatch(/^\d+\.\ds$/);
      expect(detail.data!.performance.peak_delivery_hour).toMatch(/^\d\d:00$/);

      // a /sendpush delivery is a campaign of one
      const sent = await t.client.pushSend({
        body: { user_id: 'ben', title: 'Hi', message: 'Direct', action_url: 'https://shop.example/x' },
      });
      const deliveryId = sent.data!.deliveryId;
      await fetch(`${server.url}/v1/r/${deliveryId}`, { redirect: 'manual' });
      const one = await t.client.pushCampaignStatus({ path: { campaign_id: deliveryId } });
      expect(one.data).toMatchObject({
        campaign_id: deliveryId,
        status: 'completed',
        campaign_status: null,
        stats: { total_recipients: 1, sent: 1, delivered: 1, clicked: 1, failed: 0 },
        rates: { delivery_rate: 1, open_rate: 1, click_rate: 1 },
      });

      // another app's ids, unknown ids, and a campaign's own delivery id are all 404
      const other = await server.createTenant();
      for (const foreign of [id, deliveryId, '00000000-0000-7000-8000-000000000000', 'nope', ada.delivery_id]) {
        const client = foreign === ada.delivery_id ? t.client : other.client;
        const r = await client.pushCampaignStatus({ path: { campaign_id: foreign } });
        expect(r.response.status, foreign).toBe(404);
      }
    } finally {
      await hook.close();
    }
  });
});
