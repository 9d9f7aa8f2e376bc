// The website endpoints (no API key, origin-checked) through @tally/client: origin rules, CORS,
// users from forms, the website config, visits and their bot classification, events, identify and
// push subscriptions. Rate limits, proxies, the served SDK script and the Web Push key are in
// website-serving.test.ts; the shared set-up is in website-helpers.ts.
import type { TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import type { Tenant, TestServer } from '../helpers/server.js';
import { from, HUMAN_UA, SIGNALS, SITE, startWebsiteServer } from './website-helpers.js';

let server: TestServer;
let tenant: Tenant;
let web: TallyClient;

beforeAll(async () => {
  ({ server, tenant } = await startWebsiteServer());
  web = server.clientFor();
});
afterAll(() => server?.close());

const db = () => server.db.knex;
const userRow = (externalId: string, appId = tenant.app.id) =>
  db()('users').where({ app_id: appId, external_id: externalId }).first();

async function appWith(settings: Parameters<typeof updateApp>[2]) {
  const t = await server.createTenant();
  await updateApp(db(), t.app.id, { website_url: SITE, ...settings });
  return t;
}

function visit(appId: string, visitorId: string, extra: Record<string, unknown> = {}) {
  return web.websiteLogVisit({
    body: {
      app_id: appId,
      visitor_id: visitorId,
      visit_url: `${SITE}/pricing?x=1`,
      referrer: 'https://search.example/',
      page_title: 'Pricing',
      ua: HUMAN_UA,
      signals: SIGNALS,
      ...extra,
    },
    ...from(SITE),
  });
}

describe('origin rules', () => {
  const config = (origin: Record<string, string>, appId = tenant.app.id) =>
    web.websiteConfig({ query: { app_id: appId }, headers: origin });

  it("accepts the website's origin (the path of website_url does not matter) and echoes it for CORS", async () => {
    const res = await config({ Origin: SITE });
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get('access-control-allow-origin')).toBe(SITE);
    expect(res.response.headers.get('access-control-allow-credentials')).toBe('true');
  });

  it('accepts authorized domains, with *.domain matching subdomains only, and the Referer when Origin is absent', async () => {
    expect((await config({ Origin: 'https://a.b.partner.example' })).response.status).toBe(200);
    expect((await config({ Origin: 'https://exact.example:8443' })).response.status).toBe(200);
    expect((await config({ Referer: `${SITE}/cart?step=2` })).response.status).toBe(200);
    const bare = await config({ Origin: 'https://partner.example' });
    expect(bare.response.status).toBe(403);
    for (const origin of ['https://.partner.example', 'https://partner.example.evil', 'https://a..partner.example']) {
      expect((await config({ Origin: origin })).response.status, origin).toBe(403);
    }
  });

  it('refuses other origins, other schemes or ports, and requests without Origin or Referer', async () => {
    for (const origin of ['https://evil.example', 'http://shop.example', 'https://shop.example:444', 'null']) {
      const res = await config({ Origin: origin });
      expect(res.response.status, origin).toBe(403);
      expect(res.error).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED' });
      expect(res.response.headers.get('access-control-allow-origin')).toBeNull();
    }
    const none = await config({});
    expect(none.response.status).toBe(403);
    expect(none.error).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED' });
  });

  it('answers 404 for an unknown app and for an app id that is not a UUID', async () => {
    const unknown = await config({ Origin: SITE }, '0190f0f0-0000-7000-8000-000000000000');
    expect(unknown.response.status).toBe(404);
    expect(unknown.error).toMatchObject({ code: 'NOT_FOUND' });
    const junk = await web.websiteUpsertUser({
      body: { appId: 'not-a-uuid', websiteUrl: SITE, email: 'a@example.com' },
      ...from(SITE),
    });
    expect(junk.response.status).toBe(404);
  });

  it('answers CORS preflights for allowed origins only', async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/v1/website/visits`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type',
        },
      });
    const ok = await preflight('https://x.partner.example');
    expect(ok.status).toBe(204);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://x.partner.example');
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');
    expect(ok.headers.get('access-control-allow-methods')).toContain('POST');
    expect(ok.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('content-type');
    const refused = await preflight('https://evil.example');
    expect(refused.status).toBe(204);
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('POST /v1/website/users', () => {
  it('keys users by the lower-cased email, updates them, and records where they came from once', async () => {
    const first = await web.websiteUpsertUser({
      body: { appId: tenant.app.id, websiteUrl: `${SITE}/signup`, email: 'Ada@Example.com', name: 'Ada L' },
      ...from(SITE),
    });
    expect(first.error).toBeUndefined();
    expect(first.data).toMatchObject({ success: true, external_id: 'ada@example.com' });
    const row = await userRow('ada@example.com');
    expect(first.data!.user_id).toBe(row.id);
    expect(row).toMatchObject({ email: 'Ada@Example.com', properties: { name: 'Ada L' } });
    expect(row.origin).toEqual({ channel: 'website', website_url: `${SITE}/signup` });

    const again = await web.websiteUpsertUser({
      body: {
        appId: tenant.app.id,
        websiteUrl: `${SITE}/newsletter`,
        email: 'ada@example.com',
        firstName: 'Ada',
        lastName: 'Lovelace',
      },
      ...from(SITE),
    });
    expect(again.data).toMatchObject({ user_id: row.id, external_id: 'ada@example.com' });
    const after = await userRow('ada@example.com');
    expect(after.properties).toEqual({ first_name: 'Ada', last_name: 'Lovelace', name: 'Ada Lovelace' });
    expect(after.origin).toEqual({ channel: 'website', website_url: `${SITE}/signup` });
  });

  it('keys users by externalId when given, and refuses placeholder ids and foreign origins', async () => {
    const res = await web.websiteUpsertUser({
      body: { appId: tenant.app.id, websiteUrl: SITE, email: 'grace@example.com', externalId: 'crm-42' },
      ...from(SITE),
    });
    expect(res.data).toMatchObject({ external_id: 'crm-42' });
    expect(await userRow('crm-42')).toMatchObject({ email: 'grace@example.com' });
    const junk = await web.websiteUpsertUser({
      body: { appId: tenant.app.id, websiteUrl: SITE, email: 'x@example.com', externalId: 'undefined' },
      ...from(SITE),
    });
    expect(junk.response.status).toBe(400);
    const foreign = await web.websiteUpsertUser({
      body: { appId: tenant.app.id, websiteUrl: SITE, email: 'mallory@example.com' },
      ...from('https://evil.example'),
    });
    expect(foreign.response.status).toBe(403);
    expect(await userRow('mallory@example.com')).toBeUndefined();
  });
});

describe('GET /v1/website/config', () => {
  it('reports the bot-detection mode, whether advanced signals are allowed, and no Web Push key', async () => {
    const { data } = await web.websiteConfig({ query: { app_id: tenant.app.id }, ...from(SITE) });
    expect(data).toEqual({
      success: true,
      app_id: tenant.app.id,
      bot_detection: { enabled: true, mode: 'basic', advanced_allowed: false },
      push: { webpush_public_key: null },
    });
    const advanced = await appWith({ bot_detection: 'advanced', advanced_attested: true });
    const adv = await web.websiteConfig({ query: { app_id: advanced.app.id }, ...from(SITE) });
    expect(adv.data?.bot_detection).toEqual({ enabled: true, mode: 'advanced', advanced_allowed: true });
    const off = await appWith({ bot_detection: 'off' });
    const o = await web.websiteConfig({ query: { app_id: off.app.id }, ...from(SITE) });
    expect(o.data?.bot_detection).toEqual({ enabled: false, mode: 'off', advanced_allowed: false });
  });

  it('answers a browser revalidating it with the configuration again, never 304, which the contract does not declare', async () => {
    const url = `${server.url}/v1/website/config?app_id=${tenant.app.id}`;
    const first = await fetch(url, { headers: { Origin: SITE } });
    expect(first.status).toBe(200);
    expect(first.headers.get('etag')).toBeNull();
    const again = await fetch(url, {
      headers: { Origin: SITE, 'If-None-Match': '*', 'If-Modified-Since': new Date().toUTCString() },
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ success: true, app_id: tenant.app.id });
  });
});

describe('POST /v1/website/visits', () => {
  it('logs a human visit and records it as a page_view event of the visitor', async () => {
    const res = await visit(tenant.app.id, 'visitor-human');
    expect(res.data).toMatchObject({ success: true, logged: true, is_bot: false, visit_id: expect.any(String) });
    const row = await db()('visits').where({ app_id: tenant.app.id, id: res.data!.visit_id! }).first();
    expect(row).toMatchObject({
      visitor_id: 'visitor-human',
      visit_url: `${SITE}/pricing?x=1`,
      path: '/pricing',
      referrer: 'https://search.example/',
      page_title: 'Pricing',
      is_bot: false,
      bot_reason: null,
      signals: SIGNALS,
    });
    const user = await userRow('visitor-human');
    expect(row.user_id).toBe(user.id);
    const event = await db()('events').where({ app_id: tenant.app.id, id: row.event_id }).first();
    expect(event).toMatchObject({ user_id: user.id, event_name: 'page_view', source: 'website', is_bot: false });
    expect(event.properties).toMatchObject({ url: `${SITE}/pricing?x=1`, path: '/pricing', visit_id: row.id });
  });

  it('takes page URLs as browsers write them, and refuses characters a URI cannot hold with 400', async () => {
    // location.href leaves brackets and braces unencoded in a query, and percent-encodes the rest.
    const written = `${SITE}/list?filter[a]=1&q={x}|y#top`;
    const ok = await visit(tenant.app.id, 'visitor-url', { visit_url: written });
    const row = await db()('visits').where({ app_id: tenant.app.id, id: ok.data!.visit_id! }).first();
    expect(row.visit_url).toBe(written);
    for (const bad of [`${SITE}/caf\u00e9`, `${SITE}/\u{1f300}`, `${SITE}/a b`, `${SITE}/a\u0000b`, `${SITE}/a\tb`]) {
      const res = await visit(tenant.app.id, 'visitor-url', { visit_url: bad });
      expect(res.response.status, JSON.stringify(bad)).toBe(400);
      expect(res.error, JSON.stringify(bad)).toMatchObject({ code: 'INVALID_REQUEST' });
    }
  });

  it('classifies bots from webdriver, missing JS signals, crawler and headless user agents', async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ['bot-webdriver', { signals: { ...SIGNALS, webdriver: true } }, 'webdriver'],
      ['bot-nojs', { signals: undefined }, 'missing_js_signals'],
      [
        'bot-crawler',
        { ua: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)' },
        'bot_user_agent',
      ],
      ['bot-headless', { ua: HUMAN_UA.replace('Chrome/', 'HeadlessChrome/') }, 'headless_user_agent'],
    ];
    for (const [visitor, extra, reason] of cases) {
      const res = await visit(tenant.app.id, visitor, extra);
      expect(res.data, visitor).toMatchObject({ logged: true, is_bot: true });
      const row = await db()('visits').where({ app_id: tenant.app.id, id: res.data!.visit_id! }).first();
      expect(row.bot_reason.split(','), visitor).toContain(reason);
      const event = await db()('events').where({ app_id: tenant.app.id, id: row.event_id }).first();
      expect(event.is_bot, visitor).toBe(true);
    }
  });

  it('refuses advanced signals unless advanced mode is enabled and attested', async () => {
    const refused = await visit(tenant.app.id, 'visitor-adv', { advanced_signals: { languages: ['en'] } });
    expect(refused.response.status).toBe(403);
    expect(refused.error).toMatchObject({ code: 'ADVANCED_SIGNALS_NOT_ALLOWED' });
    expect(await db()('visits').where({ app_id: tenant.app.id, visitor_id: 'visitor-adv' })).toHaveLength(0);

    const advanced = await appWith({ bot_detection: 'advanced', advanced_attested: true });
    const ok = await visit(advanced.app.id, 'visitor-adv', {
      advanced_signals: { languages: [], screen: { width: 0, height: 0 } },
    });
    expect(ok.data).toMatchObject({ logged: true, is_bot: true });
    const row = await db()('visits').where({ app_id: advanced.app.id, id: ok.data!.visit_id! }).first();
    expect(row.advanced_signals).toEqual({ languages: [], screen: { width: 0, height: 0 } });
    expect(row.bot_reason.split(',')).toEqual(expect.arrayContaining(['no_languages', 'zero_screen']));
  });

  it('stores nothing when bot detection is off', async () => {
    const off = await appWith({ bot_detection: 'off' });
    const res = await visit(off.app.id, 'visitor-off');
    expect(res.data).toEqual({ success: true, logged: false, visit_id: null, is_bot: null });
    expect(await db()('visits').where({ app_id: off.app.id })).toHaveLength(0);
    expect(await db()('events').where({ app_id: off.app.id })).toHaveLength(0);
  });
});

describe('POST /v1/website/events', () => {
  it('records a custom event of the visitor, marked as bot traffic when its visits are bots', async () => {
    const res = await web.websiteTrackEvent({
      body: {
        app_id: tenant.app.id,
        visitor_id: 'visitor-human',
        event_name: 'add_to_cart',
        properties: { sku: 'A1' },
        url: `${SITE}/p/a1`,
      },
      ...from(SITE),
    });
    expect(res.data).toMatchObject({ success: true, event_id: expect.any(String) });
    const event = await db()('events').where({ app_id: tenant.app.id, id: res.data!.event_id }).first();
    expect(event).toMatchObject({ event_name: 'add_to_cart', source: 'website', is_bot: false });
    expect(event.properties).toEqual({ sku: 'A1', url: `${SITE}/p/a1` });
    expect(event.user_id).toBe((await userRow('visitor-human')).id);

    const bot = await web.websiteTrackEvent({
      body: { app_id: tenant.app.id, visitor_id: 'bot-webdriver', event_name: 'add_to_cart' },
      ...from(SITE),
    });
    const botEvent = await db()('events').where({ app_id: tenant.app.id, id: bot.data!.event_id }).first();
    expect(botEvent.is_bot).toBe(true);
  });
});

const identify = (visitorId: string, userId: string, appId = tenant.app.id) =>
  web.websiteIdentify({ body: { app_id: appId, visitor_id: visitorId, user_id: userId }, ...from(SITE) });

describe('POST /v1/website/identify', () => {
  const eventsOf = async (externalId: string) => {
    const user = await userRow(externalId);
    return user ? db()('events').where({ app_id: tenant.app.id, user_id: user.id }).orderBy('created_at') : [];
  };

  it("moves an anonymous visitor's events and visits to a new user and keeps the visitor id as an alias", async () => {
    await visit(tenant.app.id, 'anon-1');
    await web.websiteTrackEvent({
      body: { app_id: tenant.app.id, visitor_id: 'anon-1', event_name: 'browse' },
      ...from(SITE),
    });
    const res = await identify('anon-1', 'known-1');
    expect(res.data).toEqual({ success: true, user_id: 'known-1' });
    const user = await userRow('known-1');
    expect((await eventsOf('known-1')).map((e) => e.event_name)).toEqual(['page_view', 'browse']);
    expect(await db()('visits').where({ app_id: tenant.app.id, user_id: user.id })).toHaveLength(1);
    expect(await userRow('anon-1')).toBeUndefined();
    expect(await db()('user_aliases').where({ app_id: tenant.app.id, alias_id: 'anon-1' }).first()).toMatchObject({
      user_id: user.id,
    });
    // Later calls with the old anonymous id land on the user.
    await web.websiteTrackEvent({
      body: { app_id: tenant.app.id, visitor_id: 'anon-1', event_name: 'late' },
      ...from(SITE),
    });
    expect((await eventsOf('known-1')).map((e) => e.event_name)).toContain('late');
  });

  it('joins the visitor into an existing user created from the website, adding up its counters', async () => {
    await web.websiteTrackEvent({
      body: { app_id: tenant.app.id, visitor_id: 'known-2', event_name: 'signup' },
      ...from(SITE),
    });
    await visit(tenant.app.id, 'anon-2');
    await identify('anon-2', 'known-2');
    const user = await userRow('known-2');
    expect(user.event_count).toBe('2');
    expect((await eventsOf('known-2')).map((e) => e.event_name).sort()).toEqual(['page_view', 'signup']);
    expect(await db()('visits').where({ app_id: tenant.app.id, user_id: user.id })).toHaveLength(1);
    expect(await userRow('anon-2')).toBeUndefined();
  });

  it('never merges a known user into another one (a different person signing in on the same browser)', async () => {
    await visit(tenant.app.id, 'anon-3');
    await identify('anon-3', 'person-a');
    await web.websiteTrackEvent({
      body: { app_id: tenant.app.id, visitor_id: 'person-a', event_name: 'a' },
      ...from(SITE),
    });
    const res = await identify('person-a', 'person-b');
    expect(res.data).toEqual({ success: true, user_id: 'person-b' });
    expect((await eventsOf('person-a')).map((e) => e.event_name)).toEqual(['page_view', 'a']);
    expect(await eventsOf('person-b')).toEqual([]);
    expect(await userRow('person-b')).toBeDefined();
  });
});

describe('POST /v1/website/push-subscriptions', () => {
  it("stores the browser's subscription for the visitor; the same endpoint keeps its id and follows identify", async () => {
    const subscription = {
      endpoint: 'https://push.example/send/abc',
      expirationTime: null,
      keys: { p256dh: 'BPk-key', auth: 'auth-1' },
    };
    const first = await web.websiteSubscribePush({
      body: { app_id: tenant.app.id, visitor_id: 'anon-push', subscription },
      ...from(SITE),
    });
    expect(first.data).toMatchObject({ success: true, subscription_id: expect.any(String) });
    const row = await db()('push_subscriptions')
      .where({ app_id: tenant.app.id, id: first.data!.subscription_id })
      .first();
    expect(row).toMatchObject({ endpoint: subscription.endpoint, p256dh: 'BPk-key', auth: 'auth-1' });
    expect(row.user_id).toBe((await userRow('anon-push')).id);

    const again = await web.websiteSubscribePush({
      body: {
        app_id: tenant.app.id,
        visitor_id: 'anon-push',
        subscription: { ...subscription, keys: { p256dh: 'k2', auth: 'a2' } },
      },
      ...from(SITE),
    });
    expect(again.data!.subscription_id).toBe(first.data!.subscription_id);
    await web.websiteTrackEvent({
      body: { app_id: tenant.app.id, visitor_id: 'push-user', event_name: 'x' },
      ...from(SITE),
    });
    expect((await identify('anon-push', 'push-user')).response.status).toBe(200);
    const moved = await db()('push_subscriptions')
      .where({ app_id: tenant.app.id, id: first.data!.subscription_id })
      .first();
    expect(moved).toMatchObject({ user_id: (await userRow('push-user')).id, p256dh: 'k2', auth: 'a2' });
  });
});
