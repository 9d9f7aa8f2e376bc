// The browser SDK in headless Chromium, tracking: page views (bots recognised: the browser is
// automated), one per URL change in a single-page app, forms with an email field creating users,
// trackEvent calls, refusal on a site the app does not allow, the queue handed to sendBeacon when
// the page is hidden, and events made offline sent when the network returns. setUserId and the
// user hash are in sdk-identity.test.ts; the site, the apps and Chromium are set up by
// sdk-helpers.ts. Skips without /usr/bin/chromium, except in CI, where it fails.
import { describe, expect, it } from 'vitest';
import {
  appId,
  available,
  context,
  db,
  eventsNamed,
  formPosts,
  inCi,
  open,
  refusedAppId,
  server,
  setUpBrowserSite,
  siteUrl,
  until,
  visitsOf,
} from './sdk-helpers.js';

describe.skipIf(!available && !inCi)('the browser SDK in Chromium', () => {
  setUpBrowserSite();

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
