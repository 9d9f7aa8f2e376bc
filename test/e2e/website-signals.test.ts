// Visit signals: only the documented basic fields (js_enabled, language, webdriver) are stored,
// unless the app is in attested advanced mode; other fields are accepted and dropped, so an SDK
// or browser extension that adds fields still gets its visit counted but cannot store data the
// visitor was not told about.
import type { TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppRow, updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const SITE = 'https://signals.example';
const HUMAN_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const SENT = {
  js_enabled: true,
  language: 'fr-FR',
  webdriver: false,
  fingerprint: 'c0ffee',
  screen: { width: 1280, height: 800 },
};

let server: TestServer;
let web: TallyClient;

beforeAll(async () => {
  server = await startTestServer();
  web = server.clientFor();
});
afterAll(() => server?.close());

async function appWith(settings: Partial<Pick<AppRow, 'bot_detection' | 'advanced_attested'>>) {
  const tenant = await server.createTenant();
  await updateApp(server.db.knex, tenant.app.id, { website_url: SITE, ...settings });
  return tenant.app.id;
}

async function storedSignals(appId: string, signals: Record<string, unknown>) {
  const res = await web.websiteLogVisit({
    body: { app_id: appId, visitor_id: 'sig-1', visit_url: `${SITE}/`, ua: HUMAN_UA, signals },
    headers: { Origin: SITE },
  });
  expect(res.response.status).toBe(200);
  const row = await server.db.knex('visits').where({ app_id: appId, id: res.data!.visit_id }).first();
  return { signals: row.signals as Record<string, unknown>, isBot: res.data!.is_bot };
}

describe('visit signals', () => {
  it('keeps only js_enabled, language and webdriver in basic mode', async () => {
    const { signals, isBot } = await storedSignals(await appWith({ bot_detection: 'basic' }), SENT);
    expect(signals).toEqual({ js_enabled: true, language: 'fr-FR', webdriver: false });
    expect(isBot).toBe(false);
  });

  it('keeps only the documented fields in advanced mode that is not attested', async () => {
    const appId = await appWith({ bot_detection: 'advanced', advanced_attested: false });
    const { signals } = await storedSignals(appId, SENT);
    expect(signals).toEqual({ js_enabled: true, language: 'fr-FR', webdriver: false });
  });

  it('keeps every field in attested advanced mode', async () => {
    const appId = await appWith({ bot_detection: 'advanced', advanced_attested: true });
    const { signals } = await storedSignals(appId, SENT);
    expect(signals).toEqual(SENT);
  });

  it('stores an empty object when only undocumented fields were sent', async () => {
    const { signals, isBot } = await storedSignals(await appWith({ bot_detection: 'basic' }), { extra: 1 });
    expect(signals).toEqual({});
    // Without js_enabled the visit is classified from what was kept: no JavaScript signals.
    expect(isBot).toBe(true);
  });

  it('still checks the documented fields: language is a string of at most 64 characters', async () => {
    const appId = await appWith({ bot_detection: 'basic' });
    const res = await web.websiteLogVisit({
      body: { app_id: appId, visitor_id: 'sig-2', visit_url: `${SITE}/`, signals: { language: 'x'.repeat(65) } },
      headers: { Origin: SITE },
    });
    expect(res.response.status).toBe(400);
    expect(res.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { errors: [{ path: '/body/signals/language', message: 'must NOT have more than 64 characters' }] },
    });
  });
});
