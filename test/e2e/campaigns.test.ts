// Campaigns on a clock the test moves: each schedule type, cron across a daylight-saving change,
// the audience evaluated at each occurrence, slipping away once per inactive stretch, trigger
// cooldown and stale events, the frequency cap, quiet hours, opt-out, pause and resume, and the
// erasure hook that cancels queued sends; a trigger campaign end to end (the event in, the push out),
// and GET /v1/notifications/campaigns/{id} for a campaign and a /sendpush deliveryId, with counts
// and rates worked out by hand; a trigger campaign on an event forged from a browser (issue 23)
// sends nothing. Pushes go to local servers speaking the providers' APIs. The server is the run's
// only one with campaign workers; its clock moves with real time from where it is set.
import { createHmac } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancelQueuedCampaignSends } from '../../server/src/engagement/queries/campaign-sends.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import {
  addUsers,
  type Clocked,
  createCampaign,
  detail,
  drainTriggers,
  refusingReceiver,
  startClockedServer,
  tick,
  useWonderPush,
  wonderPush,
} from '../helpers/campaigns.js';
import { type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { HOOK_SECRET, WP_TOKEN } from '../helpers/push-setup.js';
import type { Tenant } from '../helpers/server.js';

type Fake = Awaited<ReturnType<typeof wonderPush>>;
let c: Clocked;
let wp: Fake; // the provider of the tenant under test (one per tenant: other tenants' campaigns run too)
const fakes: Fake[] = [];
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let llm: FakeOpenAi;
/** Text requests (push text) the language model received. */
const textRequests = () => llm.requests.filter((r) => !r.response_format);
/** Prompts containing a key get a 500 from the model, that many times (Infinity: always). */
const llmFailures = new Map<string, number>();

beforeAll(async () => {
  // The language model: picks `checkout_completed` for "the customer paid", nothing otherwise;
  // writes every push text as "Big sale today".
  llm = await startFakeOpenAi((req) => {
    if (req.response_format?.json_schema?.name === 'trigger_event') {
      const asked = req.messages.at(-1)!.content;
      return JSON.stringify({ event_name: asked.includes('the customer paid') ? 'checkout_completed' : null });
    }
    const prompt = req.messages.at(-1)!.content;
    for (const [key, left] of llmFailures) {
      if (!prompt.includes(key) || left <= 0) continue;
      llmFailures.set(key, left - 1);
      return { status: 500, body: { error: { message: 'The server had an error', type: 'server_error' } } };
    }
    return 'Big sale today';
  });
  c = await startClockedServer('2026-03-07T12:00:00Z', { LLM_BASE_URL: llm.baseUrl, LLM_API_KEY: 'test' });
});
afterAll(async () => {
  await c?.server.close();
  await llm?.close();
  for (const f of fakes) await f.close();
});

async function tenant(users: { id: string; properties?: Record<string, unknown> }[], timezone = 'UTC') {
  const t = await c.server.createTenant();
  await c.admin.adminOrganizationsUpdate({ path: { organization_id: t.organization.id }, body: { timezone } });
  wp = await wonderPush();
  fakes.push(wp);
  await useWonderPush(c, t, wp.baseUrl);
  await addUsers(t, users);
  return t;
}

/** Pushes to this tenant's users since `from` (index in wp.calls). */
const reachedSince = (from: number) => wp.calls.slice(from).flatMap((x) => x.users);

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
      trigger_event_prompt: 'when the customer paid',
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
