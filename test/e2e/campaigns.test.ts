// Campaigns on a clock the test moves: each schedule type (scheduled, now, recurring on cron across a
// daylight-saving change, slipping away once per inactive stretch), the audience evaluated at each
// occurrence, a prompt's text written once per occurrence, inconsistent schedules refused, pause and
// resume, opt-out, the frequency cap, quiet hours, the erasure hook that cancels queued sends, and
// GET /v1/notifications/campaigns/{id} for a campaign and a /sendpush deliveryId, with counts and
// rates worked out by hand. Trigger campaigns are in campaigns-triggers.test.ts; the shared set-up
// (fake language model, clocked server, a tenant per test) is in campaigns-helpers.ts. Pushes go to
// local servers speaking the providers' APIs; the server's clock moves with real time from where it
// is set.
import { beforeAll, describe, expect, it } from 'vitest';
import { cancelQueuedCampaignSends } from '../../server/src/engagement/queries/campaign-sends.js';
import { addUsers, createCampaign, detail, refusingReceiver, tick } from '../helpers/campaigns.js';
import { HOOK_SECRET } from '../helpers/push-setup.js';
import type { Tenant } from '../helpers/server.js';
import { c, DAY, HOUR, reachedSince, setUpCampaignServer, tenant, textRequests, wp } from './campaigns-helpers.js';

setUpCampaignServer();

describe('one-shot campaigns', () => {
  let t: Tenant;
  beforeAll(async () => {
    c.set('2026-03-07T12:00:00Z');
    t = await tenant([
      { id: 'ann', properties: { first_name: 'Ann' } },
      { id: 'bob', properties: { first_name: 'Bob' } },
      { id: 'out', properties: { first_name: 'Out', push_opt_out: true } },
    ]);
  });

  it('sends a scheduled campaign once at scheduled_at, placeholders filled, never to opted-out users', async () => {
    const created = await createCampaign(c, t.app.id, {
      schedule_type: 'scheduled',
      scheduled_at: '2026-03-07T13:00:00Z',
    });
    expect(created.status).toBe('scheduled');
    const from = wp.calls.length;
    await tick(c);
    expect(wp.calls.length).toBe(from);
    c.set('2026-03-07T13:00:30Z');
    await tick(c);
    const calls = wp.calls.slice(from);
    expect(calls.map((x) => x.text).sort()).toEqual(['Hi Ann', 'Hi Bob']);
    expect(reachedSince(from).sort()).toEqual(['ann', 'bob']);
    expect((await detail(c, created.campaign_id)).status).toBe('sent');
    await tick(c);
    expect(wp.calls.length).toBe(from + 2);
    // pausing a sent campaign is a conflict
    const paused = await c.admin.adminCampaignsPause({ path: { campaign_id: created.campaign_id } });
    expect(paused.response.status).toBe(409);
  });

  it('sends a `now` campaign at the next run, as one batch per text', async () => {
    const from = wp.calls.length; // before creating: the minute schedule may run it at once
    const created = await createCampaign(c, t.app.id, {
      schedule_type: 'now',
      message: 'Sale today',
      action_url: 'https://shop.example/sale',
    });
    await tick(c);
    expect(wp.calls.slice(from)).toHaveLength(1);
    expect(wp.calls[from]!.users.sort()).toEqual(['ann', 'bob']);
    // one call, one tracked link for the batch; a click on it counts for the campaign
    const link = wp.calls[from]!.url!;
    expect(link).toMatch(/\/v1\/r\/[0-9a-f-]{36}$/);
    const click = await fetch(link, { redirect: 'manual' });
    expect(click.status).toBe(302);
    expect(click.headers.get('location')).toBe('https://shop.example/sale');
    const d = await detail(c, created.campaign_id);
    expect(d.status).toBe('sent');
    expect(d.stats).toMatchObject({ sent: 2, delivered: 2, clicked: 1, delivery_rate: 100, click_rate: 50 });
    const status = await t.client.pushCampaignStatus({ path: { campaign_id: created.campaign_id } });
    expect(status.data).toMatchObject({ status: 'completed', stats: { total_recipients: 2, clicked: 1 } });
  });

  it('writes a prompt campaign text once per occurrence, whatever the number of recipients', async () => {
    const from = wp.calls.length;
    const before = textRequests().length;
    await createCampaign(c, t.app.id, { schedule_type: 'now', message: undefined, prompt: 'Announce the sale' });
    await tick(c);
    expect(textRequests().length - before).toBe(1);
    expect(wp.calls.slice(from).map((x) => [x.text, x.users.sort()])).toEqual([['Big sale today', ['ann', 'bob']]]);
  });

  it('refuses inconsistent schedules', async () => {
    const bad = [
      { schedule_type: 'scheduled' },
      { schedule_type: 'recurring' },
      { schedule_type: 'recurring', recurrence: '61 * * * *' },
      { schedule_type: 'trigger' },
      { schedule_type: 'now', scheduled_at: '2026-03-08T00:00:00Z' },
      { schedule_type: 'scheduled', scheduled_at: '2026-03-08T00:00:00Z', recurrence: '0 9 * * *' },
    ];
    for (const body of bad) {
      const r = await c.admin.adminCampaignsCreate({
        path: { app_id: t.app.id },
        // biome-ignore lint/suspicious/noExplicitAny: deliberately inconsistent bodies
        body: { name: 'x', title: 'x', message: 'x', ...body } as any,
      });
      expect(r.response.status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('recurring campaigns', () => {
  it('runs on cron in the organization time zone across a daylight-saving change, audience each time', async () => {
    c.set('2026-03-07T12:00:00Z'); // 07:00 in New York (EST)
    const t = await tenant([{ id: 'r1', properties: { first_name: 'R' } }], 'America/New_York');
    const created = await createCampaign(c, t.app.id, { schedule_type: 'recurring', recurrence: '0 9 * * *' });
    expect((await detail(c, created.campaign_id)).next_run_at).toBe('2026-03-07T14:00:00.000Z'); // 09:00 EST
    const from = wp.calls.length;
    c.set('2026-03-07T14:00:05Z');
    await tick(c);
    expect(reachedSince(from)).toEqual(['r1']);
    const d = await detail(c, created.campaign_id);
    expect(d.status).toBe('live');
    // 8 March 2026: clocks go forward in New York; 09:00 EDT is 13:00 UTC
    expect(d.next_run_at).toBe('2026-03-08T13:00:00.000Z');
    await addUsers(t, [{ id: 'r2' }]); // joins before the next run
    c.set('2026-03-08T13:00:05Z');
    await tick(c);
    expect(reachedSince(from).sort()).toEqual(['r1', 'r1', 'r2']);
    expect((await detail(c, created.campaign_id)).next_run_at).toBe('2026-03-09T13:00:00.000Z');
  });

  it('pauses and resumes: no run while paused, missed runs skipped', async () => {
    c.set('2026-03-07T12:00:00Z');
    const t = await tenant([{ id: 'p1' }]);
    const created = await createCampaign(c, t.app.id, { schedule_type: 'recurring', recurrence: '30 12 * * *' });
    const pause = await c.admin.adminCampaignsPause({ path: { campaign_id: created.campaign_id } });
    expect(pause.data?.status).toBe('paused');
    expect((await c.admin.adminCampaignsPause({ path: { campaign_id: created.campaign_id } })).response.status).toBe(
      409,
    );
    const from = wp.calls.length;
    c.set('2026-03-07T12:31:00Z');
    await tick(c);
    expect(reachedSince(from)).toEqual([]);
    c.set('2026-03-08T12:00:00Z');
    const resumed = await c.admin.adminCampaignsResume({ path: { campaign_id: created.campaign_id } });
    expect(resumed.data?.status).toBe('scheduled');
    expect((await detail(c, created.campaign_id)).next_run_at).toBe('2026-03-08T12:30:00.000Z');
    expect((await c.admin.adminCampaignsResume({ path: { campaign_id: created.campaign_id } })).response.status).toBe(
      409,
    );
    c.set('2026-03-08T12:30:10Z');
    await tick(c);
    expect(reachedSince(from)).toEqual(['p1']);
  });
});

describe('slipping away', () => {
  it('reaches users inactive for inactivity_days once per inactive stretch', async () => {
    c.set('2026-04-01T12:00:00Z');
    const t = await tenant([]);
    const event = async (user: string, at: string) => {
      const { error } = await t.client.eventsTrack({ body: { user_id: user, event_name: 'open', timestamp: at } });
      expect(error).toBeUndefined();
    };
    await event('idle', '2026-03-20T10:00:00Z');
    await event('busy', '2026-03-31T10:00:00Z');
    const from = wp.calls.length;
    const created = await createCampaign(c, t.app.id, { schedule_type: 'slipping_away', inactivity_days: 7 });
    await tick(c);
    expect(reachedSince(from)).toEqual(['idle']);
    expect((await detail(c, created.campaign_id)).status).toBe('live');
    c.advance(HOUR);
    await tick(c);
    expect(reachedSince(from)).toEqual(['idle']); // same stretch: not again
    await event('idle', '2026-04-01T13:00:00Z'); // back, then away again
    c.set('2026-04-09T14:00:00Z');
    await tick(c);
    expect(reachedSince(from).sort()).toEqual(['busy', 'idle', 'idle']);
  });
});

describe('protections', () => {
  it('caps campaign pushes per user and day across campaigns', async () => {
    c.set('2026-06-01T12:00:00Z');
    const t = await tenant([{ id: 'cap' }]);
    await c.admin.adminAppsUpdate({ path: { app_id: t.app.id }, body: { push_frequency_cap_per_day: 2 } });
    const from = wp.calls.length;
    for (const m of ['one', 'two', 'three']) await createCampaign(c, t.app.id, { schedule_type: 'now', message: m });
    await tick(c);
    expect(reachedSince(from)).toEqual(['cap', 'cap']);
    c.advance(DAY + 60_000);
    await createCampaign(c, t.app.id, { schedule_type: 'now', message: 'four' });
    await tick(c);
    expect(reachedSince(from)).toEqual(['cap', 'cap', 'cap']);
  });

  it('holds campaign sends during quiet hours (organization time) and sends when they end', async () => {
    c.set('2026-06-10T21:30:00Z'); // 23:30 in Paris (CEST)
    const t = await tenant([{ id: 'night' }, { id: 'erased' }], 'Europe/Paris');
    const updated = await c.admin.adminAppsUpdate({
      path: { app_id: t.app.id },
      body: { push_quiet_hours: '22:00-08:00' },
    });
    expect(updated.data?.push_quiet_hours).toBe('22:00-08:00');
    const from = wp.calls.length;
    await createCampaign(c, t.app.id, { schedule_type: 'now', message: 'Good morning' });
    await tick(c);
    expect(reachedSince(from)).toEqual([]);
    // the privacy erasure cancels a user's queued sends (cancelQueuedCampaignSends, its hook)
    const erased = await t.client.usersErase({ path: { user_id: 'erased' } });
    expect(erased.data?.erased).toMatchObject({ users: 1, queued_sends_cancelled: 1 });
    const night = await c.server.db.knex('users').where({ app_id: t.app.id, external_id: 'night' }).first();
    expect(await cancelQueuedCampaignSends(c.server.db.knex, t.app.id, night.id)).toBe(1);
    await c.server.db
      .knex('campaign_sends')
      .where({ app_id: t.app.id, user_id: night.id })
      .update({ status: 'queued', reason: null }); // and back, for what follows
    c.set('2026-06-11T05:59:00Z'); // 07:59 Paris
    await tick(c);
    expect(reachedSince(from)).toEqual([]);
    c.set('2026-06-11T06:00:30Z'); // 08:00 Paris
    await tick(c);
    expect(reachedSince(from)).toEqual(['night']);
    const bad = await c.admin.adminAppsUpdate({
      path: { app_id: t.app.id },
      body: { push_quiet_hours: '08:00-08:00' },
    });
    expect(bad.response.status).toBe(400);
  });
});

describe('GET /v1/notifications/campaigns/{campaign_id}', () => {
  it('reports a campaign and a /sendpush delivery, and nothing of another app', async () => {
    const hook = await refusingReceiver('carl');
    try {
      const t = await c.server.createTenant();
      await c.admin.adminPushConfigure({
        path: { app_id: t.app.id },
        body: { provider: 'webhook', webhook_url: hook.url, webhook_secret: HOOK_SECRET },
      });
      for (const id of ['ada', 'ben', 'carl']) await t.client.usersUpsert({ body: { user_id: id } });
      const created = await c.admin.adminCampaignsCreate({
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
      await tick(c);
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
      const detail = await c.admin.adminCampaignsGet({ path: { campaign_id: id } });
      expect(detail.data!.stats).toEqual({
        sent: 2,
        delivered: 2,
        clicked: 1,
        converted: 1,
        delivery_rate: 100,
        click_rate: 50,
        conversion_rate: 50,
        failed_occurrences: 0,
      });
      expect(detail.data!.performance.best_performing_segment).toBe('all users');
      expect(detail.data!.performance.avg_delivery_time).toMatch(/^\d+\.\ds$/);
      expect(detail.data!.performance.peak_delivery_hour).toMatch(/^\d\d:00$/);

      // a /sendpush delivery is a campaign of one
      const sent = await t.client.pushSend({
        body: { user_id: 'ben', title: 'Hi', message: 'Direct', action_url: 'https://shop.example/x' },
      });
      const deliveryId = sent.data!.deliveryId;
      await fetch(`${c.server.url}/v1/r/${deliveryId}`, { redirect: 'manual' });
      const one = await t.client.pushCampaignStatus({ path: { campaign_id: deliveryId } });
      expect(one.data).toMatchObject({
        campaign_id: deliveryId,
        status: 'completed',
        campaign_status: null,
        stats: { total_recipients: 1, sent: 1, delivered: 1, clicked: 1, failed: 0 },
        rates: { delivery_rate: 1, open_rate: 1, click_rate: 1 },
      });

      // another app's ids, unknown ids, and a campaign's own delivery id are all 404
      const other = await c.server.createTenant();
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
