// What website.test.ts and website-serving.test.ts share: the site, a human browser's user agent and
// signals, the headers of a call from an origin, and the server with one tenant whose website is
// the site (authorized domains included).
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

export const SITE = 'https://shop.example';
export const HUMAN_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
export const SIGNALS = { js_enabled: true, language: 'en-GB', webdriver: false };

export const from = (origin: string) => ({ headers: { Origin: origin, 'User-Agent': HUMAN_UA } });

/** A server (Web Push endpoints allowed on push.example) and a tenant whose website is the site. */
export async function startWebsiteServer(): Promise<{ server: TestServer; tenant: Tenant }> {
  const server = await startTestServer({ PUSH_ENDPOINT_ALLOWLIST: 'push.example' });
  const tenant = await server.createTenant();
  await updateApp(server.db.knex, tenant.app.id, {
    website_url: `${SITE}/store/index.html`,
    authorized_domains: ['*.partner.example', 'exact.example:8443'],
  });
  return { server, tenant };
}
