// The browser SDK in headless Chromium, identity: setUserId joining earlier anonymous events to the
// user, linking the visitor to a user the backend created when it carries a valid userHash, and the
// hash sent with every call after it (without one, a backend user's id gets 403 and nothing is
// stored). Tracking is in sdk.test.ts; the site, the apps and Chromium are set up by
// sdk-helpers.ts. Skips without /usr/bin/chromium, except in CI, where it fails.
import { createHmac } from 'node:crypto';
import { createTallyClient } from '@tally/client';
import { describe, expect, it } from 'vitest';
import {
  appId,
  appKey,
  available,
  db,
  eventsNamed,
  inCi,
  open,
  server,
  setUpBrowserSite,
  until,
  visitsOf,
} from './sdk-helpers.js';

describe.skipIf(!available && !inCi)('the browser SDK in Chromium', () => {
  setUpBrowserSite();

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
});
