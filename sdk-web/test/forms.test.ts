// @vitest-environment jsdom
// Form hooking: which forms are picked up, what is read from them, and that the host page's
// submission is never prevented or broken, even when the network fails.
import { beforeEach, describe, expect, it, vi } from 'vitest';
import * as ServiceWeb from '../src/index.js';
import { type Call, posts, stubFetch } from './helpers.js';

const API = 'https://tally.test';
let calls: Call[];

function form(html: string, attrs: Record<string, string> = {}): HTMLFormElement {
  const f = document.createElement('form');
  for (const [k, v] of Object.entries(attrs)) f.setAttribute(k, v);
  f.innerHTML = html;
  document.body.append(f);
  return f;
}

/** Submits like a browser does; returns false if anything prevented the submission. */
const submit = (f: HTMLFormElement) => f.dispatchEvent(new Event('submit', { bubbles: true, cancelable: true }));

beforeEach(() => {
  localStorage.clear();
  document.body.innerHTML = '';
  calls = stubFetch().calls;
  ServiceWeb.init({
    appId: 'app-1',
    apiBase: API,
    autoEvents: false,
    autoHook: true,
    emailField: undefined,
    emailSelectors: undefined,
  });
});

describe('auto-hooked forms', () => {
  it('sends the user from a form with an email input, records form_submit, and never prevents the submission', async () => {
    const f = form(
      '<input type="email" name="mail" value="Ada@Example.com"><input name="first_name" value="Ada"><input name="last_name" value="Lovelace"><input type="password" name="pw" value="secret">',
      { id: 'signup' },
    );
    let pageHandlerRan = false;
    f.addEventListener('submit', () => {
      pageHandlerRan = true;
    });
    expect(submit(f)).toBe(true);
    expect(pageHandlerRan).toBe(true);
    await vi.waitFor(() => expect(posts(calls, '/v1/website/users')).toHaveLength(1));
    expect(posts(calls, '/v1/website/users')[0]).toMatchObject({
      url: `${API}/v1/website/users`,
      body: {
        appId: 'app-1',
        websiteUrl: location.origin,
        email: 'Ada@Example.com',
        firstName: 'Ada',
        lastName: 'Lovelace',
      },
    });
    expect(JSON.stringify(calls)).not.toContain('secret');
    await vi.waitFor(() => expect(posts(calls, '/v1/website/events')).toHaveLength(1));
    expect(posts(calls, '/v1/website/events')[0]!.body).toMatchObject({
      app_id: 'app-1',
      event_name: 'form_submit',
      properties: { form_id: 'signup', has_email: true },
    });
  });

  it('ignores forms without an email input, and forms flagged data-service="false"', async () => {
    submit(form('<input name="q" value="shoes">'));
    submit(form('<input type="email" value="a@example.com">', { 'data-service': 'false' }));
    await new Promise((r) => setTimeout(r, 20));
    expect(calls.filter((c) => c.method === 'POST')).toEqual([]);
  });

  it('hooks data-service="true" forms with their own app id, reading emailField', async () => {
    ServiceWeb.init({ emailField: 'contact' });
    submit(
      form('<input name="contact" value="grace@example.com">', {
        'data-service': 'true',
        'data-service-app-id': 'app-2',
      }),
    );
    await vi.waitFor(() => expect(posts(calls, '/v1/website/users')).toHaveLength(1));
    expect(posts(calls, '/v1/website/users')[0]!.body).toMatchObject({ appId: 'app-2', email: 'grace@example.com' });
  });

  it('finds the email through emailSelectors', async () => {
    ServiceWeb.init({ emailSelectors: ['#odd-field'] });
    submit(form('<input id="odd-field" value="linus@example.com"><input name="name" value="Linus T">'));
    await vi.waitFor(() => expect(posts(calls, '/v1/website/users')).toHaveLength(1));
    expect(posts(calls, '/v1/website/users')[0]!.body).toMatchObject({ email: 'linus@example.com', name: 'Linus T' });
  });

  it('does not break the submission when the network fails; the call waits in the queue', async () => {
    vi.stubGlobal('fetch', vi.fn().mockRejectedValue(new TypeError('Failed to fetch')));
    expect(submit(form('<input type="email" value="offline@example.com">'))).toBe(true);
    await vi.waitFor(() => expect(localStorage.getItem('service_queue')).toContain('offline@example.com'));
  });
});

describe('registerForm', () => {
  it('hooks one form by hand, with its own endpoint, API base and website URL, even without autoHook', async () => {
    ServiceWeb.init({ autoHook: false });
    submit(form('<input type="email" value="auto@example.com">'));
    const f = form('<input name="who" value="manual@example.com">');
    ServiceWeb.registerForm(f, {
      appId: 'app-3',
      apiBase: 'https://other.test',
      endpoint: '/custom/users',
      websiteUrl: 'https://site.test/',
      emailField: 'who',
    });
    submit(f);
    await vi.waitFor(() => expect(calls.filter((c) => c.url.includes('/custom/users'))).toHaveLength(1));
    expect(calls.find((c) => c.url.includes('/custom/users'))).toMatchObject({
      url: 'https://other.test/custom/users',
      body: { appId: 'app-3', websiteUrl: 'https://site.test/', email: 'manual@example.com' },
    });
    expect(JSON.stringify(calls)).not.toContain('auto@example.com');
  });
});

describe('sendUser', () => {
  it("resolves with the server's answer, and with null (never a rejection) when it fails", async () => {
    stubFetch(() => ({ status: 200, body: { success: true, user_id: 'u1', external_id: 'a@example.com' } }));
    await expect(ServiceWeb.sendUser({ appId: 'app-1' }, { email: 'a@example.com' })).resolves.toMatchObject({
      user_id: 'u1',
    });
    stubFetch(() => ({ status: 403 }));
    await expect(ServiceWeb.sendUser({}, { email: 'b@example.com' })).resolves.toBeNull();
  });
});
