// @vitest-environment jsdom
// The public API around page views and identity: automatic page views (one per URL change),
// page views as events when bot detection is off, the persisted visitor id, setUserId,
// trackEvent, opt-out and Global Privacy Control.
import { beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import * as ServiceWeb from '../src/index.js';
import { type Call, posts, stubFetch } from './helpers.js';

const API = 'https://tally.test';
let calls: Call[];
let detection = true;

function stub() {
  calls = stubFetch((url) =>
    url.includes('/v1/website/config')
      ? { status: 200, body: { success: true, bot_detection: { enabled: detection, advanced_allowed: false } } }
      : { status: 200 },
  ).calls;
}

beforeAll(() => {
  stub();
  ServiceWeb.init({ appId: 'app-1', apiBase: API, userIdStorageKey: 'my_uid' });
});
beforeEach(() => {
  localStorage.removeItem('service_queue');
});

describe('page views', () => {
  it('sends a visit on load and one per URL change (pushState, replaceState, hash), none for the same URL', async () => {
    await vi.waitFor(() => expect(posts(calls, '/v1/website/visits')).toHaveLength(1));
    const first = posts(calls, '/v1/website/visits')[0]!.body!;
    expect(first).toMatchObject({
      app_id: 'app-1',
      visitor_id: localStorage.getItem('my_uid'),
      visit_url: location.href,
      path: location.pathname,
      signals: { js_enabled: true, webdriver: false },
    });
    history.pushState({}, '', '/a');
    history.pushState({}, '', '/a');
    history.replaceState({}, '', '/b');
    location.hash = 'x';
    await vi.waitFor(() => expect(posts(calls, '/v1/website/visits')).toHaveLength(4));
    await new Promise((r) => setTimeout(r, 20));
    const urls = posts(calls, '/v1/website/visits').map(
      (c) => new URL(String(c.body!.visit_url)).pathname + new URL(String(c.body!.visit_url)).hash,
    );
    expect(urls).toEqual(['/', '/a', '/b', '/b#x']);
    expect(posts(calls, '/v1/website/visits')[1]!.body!.referrer).toBe(first.visit_url);
  });

  it('sends page views as page_view events when bot detection is off', async () => {
    detection = false;
    ServiceWeb.init({}); // reads the configuration again
    const before = posts(calls, '/v1/website/visits').length;
    history.pushState({}, '', '/c');
    await vi.waitFor(() => expect(posts(calls, '/v1/website/events')).toHaveLength(1));
    expect(posts(calls, '/v1/website/events')[0]!.body).toMatchObject({
      event_name: 'page_view',
      properties: { path: '/c' },
      url: location.href,
    });
    expect(posts(calls, '/v1/website/visits')).toHaveLength(before);
    detection = true;
  });
});

describe('identity', () => {
  it('persists one anonymous visitor id under userIdStorageKey', () => {
    const id = localStorage.getItem('my_uid');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    ServiceWeb.trackEvent('x');
    expect(localStorage.getItem('my_uid')).toBe(id);
  });

  it('setUserId stores the id, links the anonymous visitor to it, and later events carry it', async () => {
    const anonymous = localStorage.getItem('my_uid');
    ServiceWeb.setUserId('user-7');
    expect(localStorage.getItem('my_uid')).toBe('user-7');
    await vi.waitFor(() => expect(posts(calls, '/v1/website/identify')).toHaveLength(1));
    expect(posts(calls, '/v1/website/identify')[0]!.body).toEqual({
      app_id: 'app-1',
      visitor_id: anonymous,
      user_id: 'user-7',
    });
    ServiceWeb.setUserId('user-7'); // no change, no call
    ServiceWeb.trackEvent('after_login', { plan: 'pro' });
    await vi.waitFor(() =>
      expect(posts(calls, '/v1/website/events').some((c) => c.body!.event_name === 'after_login')).toBe(true),
    );
    const event = posts(calls, '/v1/website/events').find((c) => c.body!.event_name === 'after_login')!;
    expect(event.body).toMatchObject({
      visitor_id: 'user-7',
      properties: { plan: 'pro' },
      timestamp: expect.any(String),
    });
    expect(posts(calls, '/v1/website/identify')).toHaveLength(1);
  });

  it('setUserId passes the userHash computed by your server on to identify', async () => {
    ServiceWeb.setUserId('user-8', { userHash: 'b'.repeat(64) });
    await vi.waitFor(() => expect(posts(calls, '/v1/website/identify')).toHaveLength(2));
    expect(posts(calls, '/v1/website/identify')[1]!.body).toEqual({
      app_id: 'app-1',
      visitor_id: 'user-7',
      user_id: 'user-8',
      user_hash: 'b'.repeat(64),
    });
  });
});

describe('privacy', () => {
  it('optOut stops all sending (remembered) and drops the queue; optIn resumes', async () => {
    localStorage.setItem(
      'service_queue',
      JSON.stringify([{ i: 'q', u: `${API}/v1/website/events`, b: {}, n: 1, t: Date.now() + 60_000 }]),
    );
    ServiceWeb.optOut();
    expect(localStorage.getItem('service_queue')).toBe('[]');
    const before = calls.length;
    ServiceWeb.trackEvent('while_out');
    history.pushState({}, '', '/out');
    await new Promise((r) => setTimeout(r, 30));
    expect(calls.length).toBe(before);
    expect(localStorage.getItem('service_opt_out')).toBe('1');
    ServiceWeb.optIn();
    ServiceWeb.trackEvent('back_in');
    await vi.waitFor(() =>
      expect(posts(calls, '/v1/website/events').some((c) => c.body!.event_name === 'back_in')).toBe(true),
    );
    expect(JSON.stringify(calls)).not.toContain('while_out');
  });

  it('sends nothing while Global Privacy Control is on and respectGpc is set', async () => {
    Object.defineProperty(navigator, 'globalPrivacyControl', { value: true, configurable: true });
    try {
      ServiceWeb.trackEvent('gpc_ignored_by_default');
      ServiceWeb.init({ respectGpc: true });
      ServiceWeb.trackEvent('gpc_respected');
      await vi.waitFor(() =>
        expect(posts(calls, '/v1/website/events').some((c) => c.body!.event_name === 'gpc_ignored_by_default')).toBe(
          true,
        ),
      );
      await new Promise((r) => setTimeout(r, 30));
      expect(JSON.stringify(calls)).not.toContain('gpc_respected');
    } finally {
      ServiceWeb.init({ respectGpc: false });
      Reflect.deleteProperty(navigator, 'globalPrivacyControl');
    }
  });

  it('never throws into the page, whatever fetch does', async () => {
    vi.stubGlobal('fetch', () => {
      throw new Error('boom');
    });
    expect(() => ServiceWeb.trackEvent('e')).not.toThrow();
    expect(() => history.pushState({}, '', '/boom')).not.toThrow();
    await expect(ServiceWeb.sendUser({}, { email: 'a@example.com' })).resolves.toBeNull();
    stub();
  });
});
