// Trigger campaigns on a clock the test moves: firing on the event once per cooldown per user, stale
// events never firing, trigger_event_prompt matched against tracked events (by name or by the
// language model); occurrences whose text the model could not write, taken by a worker that
// stopped, or failed after 5 attempts (REST status and MCP detail); a trigger campaign end to end
// (the event in, the push out); and a trigger on an event forged from a browser (issue 23), which
// sends nothing. Schedules and protections are in campaigns.test.ts; the shared set-up is in
// campaigns-helpers.ts. This file's server works on a database of its own (on PostgreSQL, a fresh
// one), so the other file's server, on another clock, never takes these campaigns' work.
import { createHmac } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { createCampaign, detail, drainTriggers, tick, wonderPush } from '../helpers/campaigns.js';
import { WP_TOKEN } from '../helpers/push-setup.js';
import type { Tenant } from '../helpers/server.js';
import { c, HOUR, llmFailures, reachedSince, setUpCampaignServer, tenant, wp } from './campaigns-helpers.js';

setUpCampaignServer({ ownDatabase: 'tally_campaign_triggers' });

describe('trigger campaigns', () => {
  it('fires on the event, once per cooldown per user; stale events never fire', async () => {
    c.set('2026-05-01T12:00:00Z');
    const t = await tenant([{ id: 'buyer', properties: { first_name: 'Kim' } }]);
    await t.client.eventsTrack({ body: { user_id: 'buyer', event_name: 'signup' } });
    const created = await createCampaign(c, t.app.id, {
      schedule_type: 'trigger',
      trigger_event_name: 'purchase_completed',
      trigger_cooldown_hours: 2,
    });
    expect(created.trigger).toMatchObject({ event_name: 'purchase_completed', match_method: 'exact' });
    const from = wp.calls.length;
    const buy = (timestamp?: string) =>
      t.client.eventsTrack({ body: { user_id: 'buyer', event_name: 'purchase_completed', timestamp } });
    await buy(new Date(c.now().getTime() - 2 * HOUR).toISOString()); // client time two hours old
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual([]);
    await buy();
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual(['buyer']);
    expect(wp.calls.at(-1)!.text).toBe('Hi Kim');
    c.advance(HOUR);
    await buy();
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual(['buyer']); // cooldown
    c.advance(HOUR + 60_000);
    await buy();
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual(['buyer', 'buyer']);
    expect((await detail(c, created.campaign_id)).status).toBe('live');
  });

  it('matches trigger_event_prompt against tracked events', async () => {
    const t = await tenant([]);
    await t.client.eventsTrackBatch({
      body: {
        events: [
          { user_id: 'u', event_name: 'checkout_completed' },
          { user_id: 'u', event_name: 'app_opened' },
          { user_id: 'u', event_name: 'profile_updated' },
        ],
      },
    });
    const created = await createCampaign(c, t.app.id, {
      schedule_type: 'trigger',
      trigger_event_prompt: 'when someone completes checkout',
    });
    expect(created.trigger).toEqual({
      event_name: 'checkout_completed',
      match_method: 'fuzzy',
      available_events_count: 3,
    });
    const chosen = await createCampaign(c, t.app.id, {
      schedule_type: 'trigger',
      trigger_event_prompt: 'when the deal is sealed',
    });
    expect(chosen.trigger).toEqual({
      event_name: 'checkout_completed',
      match_method: 'llm',
      available_events_count: 3,
    });
    const none = await c.admin.adminCampaignsCreate({
      path: { app_id: t.app.id },
      body: { name: 'x', title: 'x', message: 'x', schedule_type: 'trigger', trigger_event_prompt: 'zebra xylophone' },
    });
    expect(none.response.status).toBe(400);
  });
});

describe('trigger occurrences that fail or are interrupted', { timeout: 90_000 }, () => {
  const outbox = (campaignId: string) =>
    c.server.db.knex('campaign_trigger_outbox').where({ campaign_id: campaignId }).select('*');
  const trigger = async (t: Tenant, event: string, prompt: string) =>
    createCampaign(c, t.app.id, { schedule_type: 'trigger', trigger_event_name: event, message: undefined, prompt });

  it('keeps an occurrence whose text the model could not write, and sends it once when a retry succeeds', async () => {
    c.set('2026-06-01T12:00:00Z');
    const t = await tenant([{ id: 'fan' }]);
    const created = await trigger(t, 'wishlist_added', 'FLAKY-MODEL thank them for the wish');
    // two attempts fail (the OpenAI client asks twice per attempt), the third gets the text
    llmFailures.set('FLAKY-MODEL', 4);
    const from = wp.calls.length;
    expect(
      (await t.client.eventsTrack({ body: { user_id: 'fan', event_name: 'wishlist_added' } })).error,
    ).toBeUndefined();
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual([]);
    const [first] = await outbox(created.campaign_id);
    expect(first).toMatchObject({ attempts: 1, last_error: expect.stringContaining('500') });
    expect(first.next_attempt_at.getTime() - c.now().getTime()).toBeGreaterThan(50_000); // a minute later
    await drainTriggers(c); // not due yet
    expect((await outbox(created.campaign_id))[0]).toMatchObject({ attempts: 1 });
    c.advance(61_000);
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual([]);
    expect((await outbox(created.campaign_id))[0]).toMatchObject({ attempts: 2 });
    c.advance(121_000); // then two minutes
    await drainTriggers(c);
    expect(wp.calls.slice(from).map((x) => [x.users, x.text])).toEqual([[['fan'], 'Big sale today']]);
    expect(await outbox(created.campaign_id)).toEqual([]);
    c.advance(HOUR);
    await drainTriggers(c);
    await tick(c);
    expect(reachedSince(from)).toEqual(['fan']);
    expect((await detail(c, created.campaign_id)).stats).toMatchObject({ sent: 1, failed_occurrences: 0 });
  });

  it('leaves an occurrence taken by a worker that stopped in the outbox, and sends it once when the lease ends', async () => {
    c.set('2026-06-02T12:00:00Z');
    const t = await tenant([{ id: 'kim' }]);
    const created = await trigger(t, 'cart_saved', 'Remind them of the cart');
    const user = await c.server.db.knex('users').where({ app_id: t.app.id, external_id: 'kim' }).first();
    const from = wp.calls.length;
    // what a worker killed after taking the occurrence leaves behind: taken once, leased for 2 minutes
    const now = c.now();
    await c.server.db.knex('campaign_trigger_outbox').insert({
      app_id: t.app.id,
      campaign_id: created.campaign_id,
      user_id: user.id,
      event_id: '018f0000-0000-7000-8000-0000000000aa',
      event_at: now,
      received_at: now,
      attempts: 1,
      next_attempt_at: new Date(now.getTime() + 120_000),
    });
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual([]);
    c.advance(121_000);
    await drainTriggers(c);
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual(['kim']);
    expect(await outbox(created.campaign_id)).toEqual([]);
    const sends = await c.server.db.knex('campaign_sends').where({ campaign_id: created.campaign_id });
    expect(sends.map((x) => [x.occurrence, x.status])).toEqual([
      ['event:018f0000-0000-7000-8000-0000000000aa', 'done'],
    ]);
  });

  it('records an occurrence as failed after 5 attempts, shown in the REST status and the MCP detail', async () => {
    c.set('2026-06-03T12:00:00Z');
    const t = await tenant([{ id: 'lou' }]);
    const created = await trigger(t, 'review_posted', 'BROKEN-MODEL thank them for the review');
    llmFailures.set('BROKEN-MODEL', Number.POSITIVE_INFINITY);
    const from = wp.calls.length;
    await t.client.eventsTrack({ body: { user_id: 'lou', event_name: 'review_posted' } });
    await drainTriggers(c);
    for (const wait of [1, 2, 4, 8]) {
      expect(await outbox(created.campaign_id)).toHaveLength(1);
      c.advance(wait * 60_000 + 1000);
      await drainTriggers(c);
    }
    expect(await outbox(created.campaign_id)).toEqual([]);
    expect(reachedSince(from)).toEqual([]);
    const status = await t.client.pushCampaignStatus({ path: { campaign_id: created.campaign_id } });
    expect(status.data!.stats).toMatchObject({ total_recipients: 0, failed: 0, failed_occurrences: 1 });
    const mcp = new Client({ name: 'campaigns-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${c.server.url}/mcp`), {
        requestInit: { headers: { 'X-MCP-API-Key': t.mcpKey } },
      }),
    );
    try {
      const { tools } = await mcp.listTools();
      expect(tools.map((x) => x.name)).toContain('get_campaign_status');
      const result = await mcp.callTool({
        name: 'get_campaign_status',
        arguments: { campaign_id: created.campaign_id },
      });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ stats: { sent: 0, failed_occurrences: 1 } });
    } finally {
      await mcp.close();
    }
    // the failure is kept with its reason; a later event of the user is a new occurrence
    const [failed] = await c.server.db.knex('campaign_sends').where({ campaign_id: created.campaign_id });
    expect(failed).toMatchObject({ status: 'failed', reason: expect.stringContaining('500') });
    llmFailures.delete('BROKEN-MODEL');
    await t.client.eventsTrack({ body: { user_id: 'lou', event_name: 'review_posted' } });
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual(['lou']);
  });
});

describe('trigger campaign end to end', () => {
  it('pushes after the triggering event is ingested', async () => {
    const wp = await wonderPush();
    try {
      const t = await c.server.createTenant();
      await c.admin.adminPushConfigure({
        path: { app_id: t.app.id },
        body: { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl },
      });
      await t.client.usersUpsert({ body: { user_id: 'shopper', properties: { first_name: 'Lee' } } });
      const created = await c.admin.adminCampaignsCreate({
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
      console.log(`trigger campaign: push received ${delay} ms after the event was sent (${c.server.db.kind})`);
    } finally {
      await wp.close();
    }
  });
});

describe('a trigger campaign and the website surface (issue 23)', () => {
  it('sends nothing for an event a browser forged for a REST user; the same event with its hash fires', async () => {
    const SITE = 'https://shop.example';
    c.set('2026-05-04T12:00:00Z');
    const t = await tenant([{ id: 'victim', properties: { first_name: 'Vic' } }]);
    await updateApp(c.server.db.knex, t.app.id, { website_url: SITE });
    const secret = (await c.admin.adminIdentitySecretsGenerate({ path: { app_id: t.app.id } })).data!.secret;
    await createCampaign(c, t.app.id, { schedule_type: 'trigger', trigger_event_name: 'checkout_completed' });
    await createCampaign(c, t.app.id, { schedule_type: 'trigger', trigger_event_name: 'page_view' });
    const from = wp.calls.length;
    const web = c.server.clientFor();
    const headers = { Origin: SITE };
    const forgedEvent = await web.websiteTrackEvent({
      body: { app_id: t.app.id, visitor_id: 'victim', event_name: 'checkout_completed' },
      headers,
    });
    expect(forgedEvent.response.status).toBe(403);
    const forgedVisit = await web.websiteLogVisit({
      body: { app_id: t.app.id, visitor_id: 'victim', visit_url: `${SITE}/`, signals: { js_enabled: true } },
      headers: { ...headers, 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0 Safari/537.36' },
    });
    expect(forgedVisit.response.status).toBe(403);
    // The trigger worker and the scheduler run to completion: nothing was queued, nothing is sent.
    await drainTriggers(c);
    await tick(c);
    expect(reachedSince(from)).toEqual([]);
    const victim = await c.server.db.knex('users').where({ app_id: t.app.id, external_id: 'victim' }).first();
    expect(await c.server.db.knex('events').where({ app_id: t.app.id, user_id: victim.id })).toEqual([]);

    // The site's own page, signed in with the hash its server computed: the campaign fires.
    const userHash = createHmac('sha256', secret).update('victim').digest('hex');
    const signed = await web.websiteTrackEvent({
      body: { app_id: t.app.id, visitor_id: 'victim', event_name: 'checkout_completed', user_hash: userHash },
      headers,
    });
    expect(signed.response.status).toBe(200);
    await drainTriggers(c);
    expect(reachedSince(from)).toEqual(['victim']);
  });
});
