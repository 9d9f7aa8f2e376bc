// The one ingestion entry point, seen from outside: the app's ip_mode applies to REST events and
// website events and visits alike, and a website visit is stored with its page_view or not at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IpMode } from '../../server/src/storage/tenancy.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const SITE = 'https://shop.example';
const HUMAN_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server?.close());

async function tenantWith(ipMode: IpMode): Promise<Tenant> {
  const t = await server.createTenant();
  await updateApp(server.db.knex, t.app.id, { website_url: SITE, ip_mode: ipMode, bot_detection: 'basic' });
  return t;
}

const website = (t: Tenant, path: string, body: Record<string, unknown>) =>
  fetch(`${server.url}/v1/website/${path}`, {
    method: 'POST',
    headers: { Origin: SITE, 'User-Agent': HUMAN_UA, 'content-type': 'application/json' },
    body: JSON.stringify({ app_id: t.app.id, ...body }),
  });

const storedIps = async (t: Tenant, eventName: string) =>
  (await server.db.knex('events').where({ app_id: t.app.id, event_name: eventName }).pluck('ip')) as (string | null)[];

describe('ip_mode', () => {
  it.each([
    ['full', '203.0.113.77', /^(::ffff:)?127\.0\.0\.1$/],
    ['truncate', '203.0.113.0', /^(::ffff:)?127\.0\.0\.0$/],
    ['none', null, null],
  ] as const)('%s applies to REST events and website events and visits alike', async (mode, restIp, websiteIp) => {
    const t = await tenantWith(mode);
    const rest = await t.client.eventsTrack({ body: { user_id: 'u', event_name: 'rest_event', ip: '203.0.113.77' } });
    expect(rest.response.status).toBe(200);
    const batch = await t.client.eventsTrackBatch({
      body: { events: [{ user_id: 'u', event_name: 'batch_event', ip: '203.0.113.77' }] },
    });
    expect(batch.response.status).toBe(200);
    expect(await storedIps(t, 'rest_event')).toEqual([restIp]);
    expect(await storedIps(t, 'batch_event')).toEqual([restIp]);

    expect((await website(t, 'events', { visitor_id: 'v', event_name: 'site_event' })).status).toBe(200);
    expect((await website(t, 'visits', { visitor_id: 'v', visit_url: `${SITE}/a`, signals: {} })).status).toBe(200);
    for (const name of ['site_event', 'page_view']) {
      const [ip] = await storedIps(t, name);
      if (websiteIp === null) expect(ip, name).toBeNull();
      else expect(ip, name).toMatch(websiteIp);
    }
    const [visitIp] = await server.db.knex('visits').where({ app_id: t.app.id }).pluck('ip');
    if (websiteIp === null) expect(visitIp).toBeNull();
    else expect(visitIp).toMatch(websiteIp);
  });
});

describe('a visit and its page_view', () => {
  it('are stored together or not at all', async () => {
    const t = await tenantWith('full');
    const visitor = `doomed-${Date.now()}`;
    // Make the visits insert fail for this one visitor, as a constraint or a full disk would.
    await server.db.knex.raw(`CREATE OR REPLACE FUNCTION tally_test_fail_visit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.visitor_id LIKE 'doomed-%' THEN RAISE EXCEPTION 'visit refused by test'; END IF; RETURN NEW; END $$`);
    await server.db.knex.raw(
      'CREATE TRIGGER tally_test_fail_visit BEFORE INSERT ON visits FOR EACH ROW EXECUTE FUNCTION tally_test_fail_visit()',
    );
    try {
      const failed = await website(t, 'visits', { visitor_id: visitor, visit_url: `${SITE}/x`, signals: {} });
      expect(failed.status).toBe(500);
      // a visit of another visitor, sent at the same time, is not dragged down with it
      const [a, b] = await Promise.all([
        website(t, 'visits', { visitor_id: `${visitor}-again`, visit_url: `${SITE}/y`, signals: {} }),
        website(t, 'visits', { visitor_id: 'fine', visit_url: `${SITE}/z`, signals: {} }),
      ]);
      expect([a.status, b.status]).toEqual([500, 200]);
    } finally {
      await server.db.knex.raw('DROP TRIGGER IF EXISTS tally_test_fail_visit ON visits');
      await server.db.knex.raw('DROP FUNCTION IF EXISTS tally_test_fail_visit()');
    }
    const views = await server.db
      .knex('events as e')
      .join('users as u', 'u.id', 'e.user_id')
      .where({ 'e.app_id': t.app.id, 'e.event_name': 'page_view' })
      .pluck('u.external_id');
    expect(views).toEqual(['fine']);
    expect(await server.db.knex('visits').where({ app_id: t.app.id }).pluck('visitor_id')).toEqual(['fine']);
    // nor a user row for the visitor whose visit failed
    expect(await server.db.knex('users').where({ app_id: t.app.id }).whereLike('external_id', 'doomed-%')).toHaveLength(
      0,
    );
  });
});
