// Visit fields a page could abuse: `signals` holds the three documented fields only (js_enabled,
// language, webdriver); anything else is refused with 400 in every mode, so nothing the visitor
// was not told about is stored (extra fingerprinting belongs in advanced_signals, attested). And
// the page addresses (visit_url, referrer, an event's url) are http: or https: URLs only, so no
// `javascript:` link is stored to be shown later.
import type { TallyClient, VisitRequest } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppRow, updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const SITE = 'https://signals.example';
const HUMAN_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const DOCUMENTED = { js_enabled: true, language: 'fr-FR', webdriver: false };

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

function visit(appId: string, fields: Record<string, unknown>) {
  return web.websiteLogVisit({
    body: { app_id: appId, visitor_id: 'sig-1', visit_url: `${SITE}/`, ua: HUMAN_UA, ...fields } as VisitRequest,
    headers: { Origin: SITE },
  });
}

const visitsOf = (appId: string) => server.db.knex('visits').where({ app_id: appId });

describe('visit signals', () => {
  it('stores the documented fields as sent', async () => {
    const appId = await appWith({ bot_detection: 'basic' });
    const res = await visit(appId, { signals: DOCUMENTED });
    expect(res.response.status).toBe(200);
    expect(res.data!.is_bot).toBe(false);
    const row = await visitsOf(appId).where({ id: res.data!.visit_id }).first();
    expect(row.signals).toEqual(DOCUMENTED);
  });

  it('refuses undeclared fields with 400 in every mode, attested advanced included, and stores nothing', async () => {
    const modes: Partial<Pick<AppRow, 'bot_detection' | 'advanced_attested'>>[] = [
      { bot_detection: 'basic' },
      { bot_detection: 'advanced', advanced_attested: false },
      { bot_detection: 'advanced', advanced_attested: true },
    ];
    for (const mode of modes) {
      const appId = await appWith(mode);
      for (const extra of [{ fingerprint: 'c0ffee' }, { screen: { width: 1280 } }, { __proto__x: 1 }]) {
        const res = await visit(appId, { signals: { ...DOCUMENTED, ...extra } });
        const field = Object.keys(extra)[0];
        expect(res.response.status, `${JSON.stringify(mode)} ${field}`).toBe(400);
        expect(res.error).toMatchObject({
          code: 'INVALID_REQUEST',
          details: { errors: [expect.objectContaining({ path: `/body/signals/${field}` })] },
        });
      }
      expect(await visitsOf(appId)).toEqual([]);
    }
  });

  it('still checks the documented fields: language is a string of at most 64 characters', async () => {
    const appId = await appWith({ bot_detection: 'basic' });
    const res = await visit(appId, { visitor_id: 'sig-2', signals: { language: 'x'.repeat(65) } });
    expect(res.response.status).toBe(400);
    expect(res.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { errors: [{ path: '/body/signals/language', message: 'must NOT have more than 64 characters' }] },
    });
  });
});

describe('page addresses', () => {
  const HOSTILE = [
    'javascript:alert(1)',
    'JAVASCRIPT:alert(document.cookie)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    'ftp://files.example/x',
    ' javascript:alert(1)',
  ];

  it('visit_url and referrer accept http: and https: URLs (any case), and an empty referrer', async () => {
    const appId = await appWith({ bot_detection: 'basic' });
    for (const fields of [
      { visit_url: `${SITE}/a`, referrer: '' },
      { visit_url: 'http://signals.example/b', referrer: 'http://search.example/?q=1' },
      { visit_url: 'HTTPS://signals.example/c', referrer: 'HTTPS://Search.example/' },
    ]) {
      const res = await visit(appId, { ...fields, signals: DOCUMENTED });
      expect(res.response.status, JSON.stringify(fields)).toBe(200);
    }
    expect(await visitsOf(appId)).toHaveLength(3);
  });

  it('refuses any other scheme in visit_url, referrer and an event url with 400, storing nothing', async () => {
    const appId = await appWith({ bot_detection: 'basic' });
    for (const hostile of HOSTILE) {
      for (const field of ['visit_url', 'referrer'] as const) {
        const res = await visit(appId, { [field]: hostile, signals: DOCUMENTED });
        expect(res.response.status, `${field} ${hostile}`).toBe(400);
        expect(res.error).toMatchObject({
          code: 'INVALID_REQUEST',
          details: {
            errors: expect.arrayContaining([
              { path: `/body/${field}`, message: expect.stringMatching(/http: or https:/) },
            ]),
          },
        });
      }
      const event = await web.websiteTrackEvent({
        body: { app_id: appId, visitor_id: 'sig-3', event_name: 'click', url: hostile },
        headers: { Origin: SITE },
      });
      expect(event.response.status, `url ${hostile}`).toBe(400);
    }
    expect(await visitsOf(appId)).toEqual([]);
    expect(await server.db.knex('events').where({ app_id: appId })).toEqual([]);
  });
});
