// The website surface as it is served: rate limits on the website endpoints, client addresses behind
// a proxy (TRUST_PROXY), the SDK script (API base, caching, the CDN path) and the Web Push key in the
// website config. The endpoints themselves are in website.test.ts; the shared set-up is in
// website-helpers.ts.
import http from 'node:http';
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';
import { from, HUMAN_UA, SIGNALS, SITE, startWebsiteServer } from './website-helpers.js';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  ({ server, tenant } = await startWebsiteServer());
});
afterAll(() => server?.close());

const db = () => server.db.knex;

describe('rate limits', () => {
  it('limits website users per IP and app with the standard headers, apart from the events class', async () => {
    const limited = await startTestServer({ RATE_LIMITS: '{"website_users":2}' });
    try {
      const t = await limited.createTenant();
      await updateApp(limited.db.knex, t.app.id, { website_url: SITE });
      const client = limited.clientFor();
      const call = () =>
        client.websiteUpsertUser({
          body: { appId: t.app.id, websiteUrl: SITE, email: 'rl@example.com' },
          ...from(SITE),
        });
      const statuses: number[] = [];
      let last: Awaited<ReturnType<typeof call>> | undefined;
      for (let i = 0; i < 3; i++) {
        last = await call();
        statuses.push(last.response.status);
      }
      expect(statuses).toEqual([200, 200, 429]);
      const h = last!.response.headers;
      expect(h.get('x-ratelimit-limit')).toBe('2');
      expect(h.get('x-ratelimit-remaining')).toBe('0');
      expect(Number(h.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
      expect(Number(h.get('retry-after'))).toBeGreaterThan(0);
      expect(last!.error).toMatchObject({
        code: 'RATE_LIMIT_EXCEEDED',
        details: { limit: 2, window: 60, retry_after: expect.any(Number) },
      });
      const config = await client.websiteConfig({ query: { app_id: t.app.id }, ...from(SITE) });
      expect(config.response.status).toBe(200);
      expect(config.response.headers.get('x-ratelimit-limit')).toBe('600');
      const other = await limited.createTenant();
      await updateApp(limited.db.knex, other.app.id, { website_url: SITE });
      const otherApp = await client.websiteUpsertUser({
        body: { appId: other.app.id, websiteUrl: SITE, email: 'rl@example.com' },
        ...from(SITE),
      });
      expect(otherApp.response.status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe('client addresses behind a proxy (TRUST_PROXY)', () => {
  const visitFrom = (on: TestServer, visitorId: string, forwardedFor: string) =>
    on.clientFor().websiteLogVisit({
      body: { app_id: tenant.app.id, visitor_id: visitorId, visit_url: `${SITE}/`, ua: HUMAN_UA, signals: SIGNALS },
      headers: { Origin: SITE, 'X-Forwarded-For': forwardedFor },
    });
  const storedIpOf = async (visitId: string) =>
    (await db()('visits').where({ app_id: tenant.app.id, id: visitId }).first()).ip;

  it('believes X-Forwarded-For from a loopback proxy by default, and from nobody with TRUST_PROXY=false', async () => {
    const trusted = await visitFrom(server, 'proxy-1', '203.0.113.9');
    expect(await storedIpOf(trusted.data!.visit_id!)).toBe('203.0.113.9');
    const direct = await startTestServer({ TRUST_PROXY: 'false' }, { database: server.db });
    try {
      const ignored = await visitFrom(direct, 'proxy-2', '203.0.113.9');
      expect(await storedIpOf(ignored.data!.visit_id!)).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    } finally {
      await direct.close();
    }
  });

  it('takes the configured number of proxy hops, so each visitor behind a load balancer is limited apart', async () => {
    const behind = await startTestServer(
      { TRUST_PROXY: '1', RATE_LIMITS: JSON.stringify({ website_events: 1 }) },
      { database: server.db },
    );
    try {
      // A client forging its own X-Forwarded-For only adds a hop: the proxy's entry is used.
      const first = await visitFrom(behind, 'lb-1', '198.51.100.1, 192.0.2.10');
      expect(await storedIpOf(first.data!.visit_id!)).toBe('192.0.2.10');
      const other = await visitFrom(behind, 'lb-2', '192.0.2.11');
      expect(other.response.status).toBe(200);
      const again = await visitFrom(behind, 'lb-3', '198.51.100.2, 192.0.2.10');
      expect(again.response.status).toBe(429);
    } finally {
      await behind.close();
    }
  });
});

/** A GET with a chosen Host header (fetch always sends the URL's own). */
function getWithHost(url: string, host: string): Promise<{ headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers: { host } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ headers: res.headers, body }));
      })
      .on('error', reject);
  });
}

describe('the SDK script', () => {
  it('is served with the API base embedded (from the Host header: never cached) and ETag revalidation', async () => {
    const res = await fetch(`${server.url}/sdk/v1/service-web.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('javascript');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = await res.text();
    expect(body).toContain(server.url);
    expect(body).not.toContain('__TALLY_API_BASE__');
    // Another Host header gets a script with that address: no cache may keep it.
    const forged = await getWithHost(`${server.url}/sdk/v1/service-web.js`, 'evil.example');
    expect(forged.body).toContain('http://evil.example');
    expect(forged.headers['cache-control']).toBe('no-store');
    const etag = res.headers.get('etag')!;
    const again = await fetch(`${server.url}/sdk/service-web.js`, { headers: { 'If-None-Match': etag } });
    expect(again.status).toBe(304);
  });

  it('is also served under the path of CDN_URL, with PUBLIC_BASE_URL as its API base', async () => {
    const cdn = await startTestServer({
      CDN_URL: 'https://cdn.example.com/tally/',
      PUBLIC_BASE_URL: 'https://api.shop.example',
    });
    try {
      const res = await fetch(`${cdn.url}/tally/sdk/v1/service-web.js`);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=3600');
      expect(await res.text()).toContain('https://api.shop.example');
      // The Host header no longer matters: every client gets the same, cacheable script.
      const forged = await getWithHost(`${cdn.url}/sdk/v1/service-web.js`, 'evil.example');
      expect(forged.headers['cache-control']).toBe('public, max-age=3600');
      expect(forged.body).toContain('https://api.shop.example');
      expect(forged.body).not.toContain('evil.example');
      expect((await fetch(`${cdn.url}/sdk/v1/service-web.js`)).status).toBe(200);
    } finally {
      await cdn.close();
    }
  });
});

describe('Web Push key in the website config', () => {
  it('is null until the app configures Web Push, then the VAPID public key', async () => {
    const pushServer = await startTestServer({ SECRET_KEY: 'a-secret-key-for-website-config-tests' });
    try {
      const t = await pushServer.createTenant();
      await updateApp(pushServer.db.knex, t.app.id, { website_url: SITE });
      const browser = pushServer.clientFor();
      const before = await browser.websiteConfig({ query: { app_id: t.app.id }, ...from(SITE) });
      expect(before.data?.push).toEqual({ webpush_public_key: null });
      const admin = createTallyClient({ baseUrl: pushServer.url, adminToken: pushServer.config.adminToken });
      const configured = await admin.adminPushConfigure({
        path: { app_id: t.app.id },
        body: { provider: 'webpush', vapid_subject: 'mailto:ops@shop.example' },
      });
      expect(configured.error).toBeUndefined();
      const after = await browser.websiteConfig({ query: { app_id: t.app.id }, ...from(SITE) });
      expect(after.data?.push.webpush_public_key).toBe(configured.data?.webpush_public_key);
      expect(after.data?.push.webpush_public_key).toMatch(/^[A-Za-z0-9_-]{80,}$/);
    } finally {
      await pushServer.close();
    }
  });
});
