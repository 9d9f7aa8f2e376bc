// The browser SDK in headless Chromium: a test site on http://localhost:<port> loads the script
// from Tally on http://127.0.0.1:<port> (another origin, so CORS is real) and we check what lands
// in storage. Skips without /usr/bin/chromium, except in CI, where it fails.

import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createTallyClient } from '@tally/client';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const CHROMIUM = '/usr/bin/chromium';
const available = fs.existsSync(CHROMIUM);
const inCi = process.env.CI === 'true';
if (!available && !inCi) {
  console.warn(`Browser tests skipped: no Chromium at ${CHROMIUM} (install it with: apt-get install -y chromium).`);
}

let server: TestServer;
let site: http.Server;
let siteUrl: string;
let context: BrowserContext;
let appId: string;
let appKey: string;
let refusedAppId: string;
let profile: string;
const formPosts: string[] = [];
let keys = 0;

function html(body: string, app: string, key: string): string {
  return `<!doctype html><html><head><title>Test page</title>
<script src="${server.url}/sdk/v1/service-web.js"></script>
<script>ServiceWeb.init({ appId: ${JSON.stringify(app)}, userIdStorageKey: ${JSON.stringify(key)}, debug: true });</script>
</head><body>${body}</body></html>`;
}

const BODIES: Record<string, (q: URLSearchParams) => string> = {
  '/form': (q) => `<form id="signup" method="post" action="/thanks?${q}">
    <input type="email" name="email"><input name="first_name"><button id="go">Sign up</button></form>`,
  '/thanks': () => '<p id="thanks">Thanks</p>',
};

function serveSite(req: http.IncomingMessage, res: http.ServerResponse) {
  const url = new URL(req.url ?? '/', 'http://localhost');
  let posted = '';
  req.on('data', (chunk) => {
    posted += chunk;
  });
  req.on('end', () => {
    if (req.method === 'POST') formPosts.push(posted);
    const q = url.searchParams;
    const body = BODIES[url.pathname]?.(q) ?? `<button id="ok" onclick="this.textContent='clicked'">Click</button>`;
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(html(body, q.get('app') ?? '', q.get('key') ?? 'service_user_id'));
  });
}

/** Polls until `check` passes (the SDK sends in the background), failing after 10 s. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (check(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const db = () => server.db.knex;
const visitsOf = (app: string, key: string) =>
  db()('visits').where({ app_id: app }).whereLike('visit_url', `%key=${key}%`).orderBy('created_at');
const eventsNamed = (app: string, name: string) => db()('events').where({ app_id: app, event_name: name });

/** A fresh storage key per test, so each test starts as a new anonymous visitor. */
async function open(pathname: string, app = appId): Promise<{ page: Page; key: string; url: string }> {
  const key = `k${++keys}`;
  const page = await context.newPage();
  if (process.env.SDK_DEBUG) page.on('console', (m) => console.log(key, m.text()));
  const url = `${siteUrl}${pathname}?app=${app}&key=${key}`;
  await page.goto(url);
  return { page, key, url };
}

describe.skipIf(!available && !inCi)('the browser SDK in Chromium', () => {
  beforeAll(async () => {
    if (!available)
      throw new Error(`CI=true and no Chromium at ${CHROMIUM}: install it with apt-get install -y chromium.`);
    server = await startTestServer({ SECRET_KEY: 'browser-test-secret-key-0123456789' });
    site = http.createServer(serveSite);
    await new Promise<void>((resolve) => site.listen(0, resolve));
    siteUrl = `http://localhost:${(site.address() as AddressInfo).port}`;
    const allowed = await server.createTenant();
    await updateApp(db(), allowed.app.id, { website_url: siteUrl });
    appId = allowed.app.id;
    appKey = allowed.apiKey;
    const refused = await server.createTenant();
    await updateApp(db(), refused.app.id, { website_url: 'https://elsewhere.example' });
    refusedAppId = refused.app.id;
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await context?.close();
    if (site) await new Promise((r) => site.close(r));
    await server?.close();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  it('records a page view, classified as a bot because the browser is automated', async () => {
    const { page, key, url } = await open('/');
    const visits = await until(
      () => visitsOf(appId, key),
      (v) => v.length === 1,
    );
    expect(visits).toHaveLength(1);
    expect(visits[0]).toMatchObject({ visit_url: url, path: '/', page_title: 'Test page', is_bot: true });
    expect(visits[0].bot_reason.split(',')).toEqual(expect.arrayContaining(['webdriver', 'headless_user_agent']));
    expect(visits[0].visitor_id).toBe(await page.evaluate((k) => localStorage.getItem(k), key));
    const event = await db()('events').where({ app_id: appId, id: visits[0].event_id }).first();
    expect(event).toMatchObject({ event_name: 'page_view', is_bot: true, source: 'website' });
    await page.close();
  });

  it('records one page view per URL change in a single-page app', async () => {
    const { page, key, url } = await open('/spa');
    const expectVisits = (n: number) =>
      until(
        () => visitsOf(appId, key),
        (v) => v.length >= n,
      );
    await expectVisits(1);
    const steps: [string, string][] = [
      [`history.pushState({}, '', '/spa/a?key=${key}')`, `/spa/a?key=${key}`],
      [
        `history.pushState({}, '', '/spa/a?key=${key}'); history.replaceState({}, '', '/spa/b?key=${key}')`,
        `/spa/b?key=${key}`,
      ],
      [`location.hash = 'h'`, `/spa/b?key=${key}#h`],
      ['history.back()', `/spa/b?key=${key}`],
    ];
    for (const [i, [script]] of steps.entries()) {
      await page.evaluate(script);
      await expectVisits(i + 2);
    }
    await page.evaluate(`history.replaceState(history.state, '', location.href)`); // same URL: no view
    await new Promise((r) => setTimeout(r, 300));
    const urls = (await visitsOf(appId, key)).map((v) => v.visit_url);
    expect(urls).toEqual([url, ...steps.map(([, p]) => siteUrl + p)]);
    await page.close();
  });

  it('lets a form with an email field submit normally and creates the user', async () => {
    const { page } = await open('/form');
    await page.fill('input[name=email]', 'Form.User@Example.com');
    await page.fill('input[name=first_name]', 'Form');
    await Promise.all([page.waitForURL('**/thanks**'), page.click('#go')]);
    expect(await page.textContent('#thanks')).toBe('Thanks');
    expect(formPosts.some((p) => p.includes('email=Form.User%40Example.com'))).toBe(true);
    const user = await until(
      () => db()('users').where({ app_id: appId, external_id: 'form.user@example.com' }).first(),
      (u) => u !== undefined,
    );
    expect(user).toMatchObject({ email: 'Form.User@Example.com', properties: { first_name: 'Form', name: 'Form' } });
    const submits = await until(
      () => eventsNamed(appId, 'form_submit'),
      (e) => e.length > 0,
    );
    expect(submits[0].properties).toMatchObject({ form_id: 'signup', has_email: true });
    await page.close();
  });

  it('records trackEvent calls as events of the visitor', async () => {
    const { page, key } = await open('/');
    await page.evaluate(`window.ServiceWeb.trackEvent('buy_click', { sku: 'X1' })`);
    const events = await until(
      () => eventsNamed(appId, 'buy_click'),
      (e) => e.length === 1,
    );
    expect(events[0]).toMatchObject({ source: 'website', properties: { sku: 'X1' } });
    const visitor = await page.evaluate((k) => localStorage.getItem(k), key);
    const user = await db()('users').where({ app_id: appId, id: events[0].user_id }).first();
    expect(user.external_id).toBe(visitor);
    await page.close();
  });

  it('joins earlier anonymous events to the user given to setUserId', async () => {
    const { page, key } = await open('/');
    const sw = 'window.ServiceWeb';
    await until(
      () => visitsOf(appId, key),
      (v) => v.length === 1,
    );
    await page.evaluate(`${sw}.trackEvent('before_login')`);
    await until(
      () => eventsNamed(appId, 'before_login'),
      (e) => e.length === 1,
    );
    await page.evaluate(`${sw}.setUserId('browser-user-1')`);
    expect(await page.evaluate((k) => localStorage.getItem(k), key)).toBe('browser-user-1');
    await page.evaluate(`${sw}.trackEvent('after_login')`);
    const names = await until(
      async () => {
        const user = await db()('users').where({ app_id: appId, external_id: 'browser-user-1' }).first();
        if (!user) return [];
        const rows = await db()('events').where({ app_id: appId, user_id: user.id }).orderBy('created_at');
        return rows.map((e) => e.event_name);
      },
      (n) => n.length === 3,
    );
    expect(names).toEqual(['page_view', 'before_login', 'after_login']);
    await page.close();
  });

  it('links the visitor to a user the backend created when setUserId carries a valid userHash', async () => {
    // The site's server: the user exists through the REST API, and the page gets its hash.
    const backend = server.clientFor(appKey);
    await backend.usersUpsert({ body: { user_id: 'backend-user-1', email: 'b1@example.com' } });
    const admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
    const { data: created } = await admin.adminIdentitySecretsGenerate({ path: { app_id: appId } });
    const userHash = createHmac('sha256', created!.secret).update('backend-user-1').digest('hex');

    const { page, key } = await open('/');
    const sw = 'window.ServiceWeb';
    await until(
      () => visitsOf(appId, key),
      (v) => v.length === 1,
    );
    const visitor = await page.evaluate((k) => localStorage.getItem(k), key);
    const identifyAnswer = () => page.waitForResponse((r) => r.url().endsWith('/v1/website/identify'));
    // Without the hash the server refuses (the SDK drops the call): the visitor's history stays apart.
    const [refused] = await Promise.all([identifyAnswer(), page.evaluate(`${sw}.setUserId('backend-user-1')`)]);
    expect(refused.status()).toBe(403);
    expect(await db()('users').where({ app_id: appId, external_id: visitor }).first()).toBeDefined();
    // Back to the anonymous id, then the same call with the hash the site's server computed.
    await page.evaluate(([k, v]) => localStorage.setItem(k!, v!), [key, visitor]);
    const [accepted] = await Promise.all([
      identifyAnswer(),
      page.evaluate(`${sw}.setUserId('backend-user-1', { userHash: ${JSON.stringify(userHash)} })`),
    ]);
    expect(accepted.status()).toBe(200);
    const names = await until(
      async () => {
        const user = await db()('users').where({ app_id: appId, external_id: 'backend-user-1' }).first();
        return db()('events').where({ app_id: appId, user_id: user.id }).pluck('event_name');
      },
      (n) => n.includes('page_view'),
    );
    expect(names).toContain('page_view');
    expect(await db()('users').where({ app_id: appId, external_id: visitor }).first()).toBeUndefined();
    expect(await db()('user_aliases').where({ app_id: appId, alias_id: visitor }).first()).toMatchObject({
      user_id: (await db()('users').where({ app_id: appId, external_id: 'backend-user-1' }).first()).id,
    });
    await page.close();
  });

  it('after setUserId(id, { userHash }) sends the hash with every call, so events and visits land on that user', async () => {
    // A user of the site's backend, and the hash the site's server computes for it.
    const backend = server.clientFor(appKey);
    await backend.usersUpsert({ body: { user_id: 'backend-user-2', email: 'b2@example.com' } });
    await backend.usersUpsert({ body: { user_id: 'backend-user-3', email: 'b3@example.com' } });
    const admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
    const { data: listed } = await admin.adminIdentitySecretsList({ path: { app_id: appId } });
    if (listed!.items.length === 2) {
      await admin.adminIdentitySecretsRemove({ path: { app_id: appId, secret_id: listed!.items[0]!.secret_id } });
    }
    const { data: created } = await admin.adminIdentitySecretsGenerate({ path: { app_id: appId } });
    const userHash = createHmac('sha256', created!.secret).update('backend-user-2').digest('hex');
    const sw = 'window.ServiceWeb';

    const { page, key } = await open('/');
    await until(
      () => visitsOf(appId, key),
      (v) => v.length === 1,
    );
    const answer = (path: string) => page.waitForResponse((r) => r.url().endsWith(path));
    const [identified] = await Promise.all([
      answer('/v1/website/identify'),
      page.evaluate(`${sw}.setUserId('backend-user-2', { userHash: ${JSON.stringify(userHash)} })`),
    ]);
    expect(identified.status()).toBe(200);
    const [tracked] = await Promise.all([
      answer('/v1/website/events'),
      page.evaluate(`${sw}.trackEvent('signed_in_event', { n: 1 })`),
    ]);
    expect(tracked.request().postDataJSON()).toMatchObject({
      visitor_id: 'backend-user-2',
      event_name: 'signed_in_event',
      user_hash: userHash,
    });
    expect(tracked.status()).toBe(200);
    // A single-page navigation: the visit carries the hash too.
    const [visited] = await Promise.all([
      answer('/v1/website/visits'),
      page.evaluate(`history.pushState({}, '', location.pathname + '?app=${appId}&key=${key}&step=2')`),
    ]);
    expect(visited.request().postDataJSON()).toMatchObject({ visitor_id: 'backend-user-2', user_hash: userHash });
    expect(visited.status()).toBe(200);
    const user = await db()('users').where({ app_id: appId, external_id: 'backend-user-2' }).first();
    const events = await db()('events').where({ app_id: appId, user_id: user.id }).pluck('event_name');
    expect(events).toEqual(expect.arrayContaining(['signed_in_event', 'page_view']));
    expect(await db()('visits').where({ app_id: appId, user_id: user.id })).toHaveLength(2);

    // Without a hash, a backend user's id set in the page gets 403 on every call: nothing is stored.
    const [refused] = await Promise.all([
      answer('/v1/website/identify'),
      page.evaluate(`${sw}.setUserId('backend-user-3')`),
    ]);
    expect(refused.status()).toBe(403);
    const [unsigned] = await Promise.all([
      answer('/v1/website/events'),
      page.evaluate(`${sw}.trackEvent('unsigned_event')`),
    ]);
    expect(unsigned.request().postDataJSON()).not.toHaveProperty('user_hash');
    expect(unsigned.status()).toBe(403);
    expect(await eventsNamed(appId, 'unsigned_event')).toEqual([]);
    await page.close();
  });

  it('is refused on a site the app does not allow, while the page keeps working', async () => {
    const errors: string[] = [];
    const page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    if (process.env.SDK_DEBUG) page.on('console', (m) => console.log('refused', m.text()));
    page.on('requestfailed', (r) => process.env.SDK_DEBUG && console.log('failed', r.url(), r.failure()?.errorText));
    page.on('response', (r) => process.env.SDK_DEBUG && console.log('response', r.url(), r.status()));
    // The server answers 403 without CORS headers, so the browser reports a failed request.
    const refusedVisit = page.waitForEvent('requestfailed', (r) => r.url().includes('/v1/website/visits'));
    await page.goto(`${siteUrl}/?app=${refusedAppId}&key=refused`);
    await refusedVisit;
    const refusedEvent = page.waitForEvent('requestfailed', (r) => r.url().includes('/v1/website/events'));
    await page.evaluate(`window.ServiceWeb.trackEvent('should_not_land')`);
    await refusedEvent;
    await page.click('#ok');
    expect(await page.textContent('#ok')).toBe('clicked');
    expect(errors).toEqual([]);
    expect(await db()('events').where({ app_id: refusedAppId })).toHaveLength(0);
    expect(await db()('visits').where({ app_id: refusedAppId })).toHaveLength(0);
    await page.close();
  });

  it('hands what is still queued to sendBeacon when the page is hidden, and the JSON beacon is accepted', async () => {
    const { page, key } = await open('/');
    await until(
      () => visitsOf(appId, key),
      (v) => v.length === 1,
    );
    // A call waiting for a retry an hour from now: only the pagehide beacon can deliver it.
    const call = { app_id: appId, visitor_id: 'beacon-visitor', event_name: 'beacon_event' };
    await page.evaluate(
      ([url, body]) => {
        const queue = JSON.parse(localStorage.getItem('service_queue') ?? '[]');
        queue.push({ i: 'beacon', u: url, b: body, n: 1, t: Date.now() + 3_600_000 });
        localStorage.setItem('service_queue', JSON.stringify(queue));
      },
      [`${server.url}/v1/website/events`, call] as const,
    );
    await page.goto('about:blank');
    const events = await until(
      () => eventsNamed(appId, 'beacon_event'),
      (e) => e.length === 1,
    );
    expect(events).toHaveLength(1);
    await page.close();
  });

  it('keeps events made offline in its queue and sends them when the network returns', async () => {
    const { page, key } = await open('/');
    await until(
      () => visitsOf(appId, key),
      (v) => v.length === 1,
    );
    await context.setOffline(true);
    try {
      await page.evaluate(`window.ServiceWeb.trackEvent('offline_event', { n: 1 })`);
      const queued = await until(
        () => page.evaluate(() => localStorage.getItem('service_queue') ?? ''),
        (q) => q.includes('offline_event'),
      );
      expect(queued).toContain('offline_event');
      expect(await eventsNamed(appId, 'offline_event')).toHaveLength(0);
    } finally {
      await context.setOffline(false);
    }
    const events = await until(
      () => eventsNamed(appId, 'offline_event'),
      (e) => e.length === 1,
    );
    expect(events).toHaveLength(1);
    expect(await page.evaluate(() => localStorage.getItem('service_queue'))).not.toContain('offline_event');
    await page.close();
  });
});
