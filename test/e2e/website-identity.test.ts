// One identity rule for every key-less write (issue 23): without a valid hash, a browser may only
// create, change or add to a user the website created and the REST users API never wrote. Website
// users (by externalId, or by the lower-cased email), events and visits naming a REST user, a
// website user the backend later wrote, or an alias of either are refused with 403
// IDENTITY_NOT_VERIFIED and change nothing; with the user's hash they succeed. The rule holds when
// the REST API writes the same user at the same moment, and a refused request in a group commit
// does not fail the others. Property-based: any identifier the REST API accepts is then closed.
import { createHmac } from 'node:crypto';
import { createTallyClient, type TallyClient, type WebsiteUserRequest } from '@tally/client';
import fc from 'fast-check';
import type { Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uuidv7 } from '../../server/src/ids.js';
import { createLogger } from '../../server/src/logger.js';
import { EventWriter } from '../../server/src/storage/event-writer.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { ingest } from '../../server/src/tracking/ingestion.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const SITE = 'https://shop.example';
const SECRET_KEY = 'website-identity-secret-key-0123456';
const HUMAN_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
// A forged Origin is as easy as any other header outside a browser.
const from = { headers: { Origin: SITE, 'User-Agent': HUMAN_UA } };

let server: TestServer;
let web: TallyClient;
let admin: TallyClient;

beforeAll(async () => {
  server = await startTestServer({ SECRET_KEY, PUSH_ENDPOINT_ALLOWLIST: 'push.example' });
  web = server.clientFor();
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
});
afterAll(() => server?.close());

const db = () => server.db.knex;

interface Site {
  t: Tenant;
  appId: string;
  /** The hash the site's server would compute for an identifier. */
  hash(id: string): string;
}

async function site(): Promise<Site> {
  const t = await server.createTenant();
  await updateApp(db(), t.app.id, { website_url: SITE });
  const res = await admin.adminIdentitySecretsGenerate({ path: { app_id: t.app.id } });
  expect(res.error).toBeUndefined();
  const secret = res.data!.secret;
  return { t, appId: t.app.id, hash: (id) => createHmac('sha256', secret).update(id).digest('hex') };
}

const websiteEvent = (s: Site, visitorId: string, extra: Record<string, unknown> = {}) =>
  web.websiteTrackEvent({ body: { app_id: s.appId, visitor_id: visitorId, event_name: 'forged', ...extra }, ...from });

const websiteVisit = (s: Site, visitorId: string, extra: Record<string, unknown> = {}) =>
  web.websiteLogVisit({
    body: {
      app_id: s.appId,
      visitor_id: visitorId,
      visit_url: `${SITE}/account`,
      ua: HUMAN_UA,
      signals: { js_enabled: true, language: 'en', webdriver: false },
      ...extra,
    },
    ...from,
  });

const websiteUser = (s: Site, body: Record<string, unknown>) =>
  web.websiteUpsertUser({
    body: {
      appId: s.appId,
      websiteUrl: SITE,
      email: 'attacker@evil.test',
      firstName: 'Eve',
      ...body,
    } as WebsiteUserRequest,
    ...from,
  });

const identify = (s: Site, visitorId: string, userId: string) =>
  web.websiteIdentify({ body: { app_id: s.appId, visitor_id: visitorId, user_id: userId }, ...from });

/** The user an identifier names (external id or alias), with everything a forged call could touch. */
async function snapshot(appId: string, identifier: string) {
  const alias = await db()('user_aliases').where({ app_id: appId, alias_id: identifier }).first();
  const user = alias
    ? await db()('users').where({ app_id: appId, id: alias.user_id }).first()
    : await db()('users').where({ app_id: appId, external_id: identifier }).first();
  expect(user, identifier).toBeDefined();
  const events = await db()('events').where({ app_id: appId, user_id: user.id }).orderBy('id').pluck('id');
  const visits = await db()('visits').where({ app_id: appId, user_id: user.id }).orderBy('id').pluck('id');
  const subscriptions = await db()('push_subscriptions').where({ app_id: appId, user_id: user.id }).pluck('id');
  return {
    id: user.id,
    external_id: user.external_id,
    email: user.email,
    properties: user.properties,
    origin: user.origin,
    event_count: user.event_count,
    events,
    visits,
    subscriptions,
  };
}

/**
 * The users a forged call may name: created through REST (`POST /v1/users`, or an event), a
 * website user the backend later wrote through `POST /v1/users`, a REST user whose id is an email,
 * and an alias of each kind (one made by the REST API, one made by the browser itself).
 */
async function closedUsers(s: Site): Promise<string[]> {
  const ok = (r: { response: Response }) => expect(r.response.status).toBe(200);
  ok(await s.t.client.usersUpsert({ body: { user_id: 'cust-1', email: 'cust-1@example.com' } }));
  ok(await s.t.client.usersCreateAlias({ body: { user_id: 'cust-1', alias_id: 'cust-1-device' } }));
  ok(await s.t.client.eventsTrack({ body: { user_id: 'event-user', event_name: 'signup' } }));
  ok(await s.t.client.usersUpsert({ body: { user_id: 'owner@shop.example', email: 'owner@shop.example' } }));
  // A website user (its own page views), linked to another browser by /identify, then written by the backend.
  ok(await websiteEvent(s, 'web-1', { event_name: 'browse' }));
  ok(await identify(s, 'web-1-laptop', 'web-1'));
  ok(
    await s.t.client.usersUpsert({
      body: { user_id: 'web-1', email: 'web-1@example.com', properties: { plan: 'gold' } },
    }),
  );
  return ['cust-1', 'cust-1-device', 'event-user', 'owner@shop.example', 'web-1', 'web-1-laptop'];
}

function refusedAsUnverified(res: { response: Response; error?: unknown }, what: string) {
  expect(res.response.status, what).toBe(403);
  expect(res.error, what).toMatchObject({ code: 'IDENTITY_NOT_VERIFIED', message: expect.stringContaining('hash') });
}

describe('without a hash, a browser cannot reach a user the backend created or wrote', () => {
  let s: Site;
  let names: string[];
  beforeAll(async () => {
    s = await site();
    names = await closedUsers(s);
  });

  it('website users with externalId: 403, and the email, properties and history stay as they were', async () => {
    for (const name of names) {
      const before = await snapshot(s.appId, name);
      refusedAsUnverified(await websiteUser(s, { externalId: name }), name);
      expect(await snapshot(s.appId, name), name).toEqual(before);
    }
  });

  it('website users keyed by an email that is a REST user id (any case): 403, nothing changes', async () => {
    const before = await snapshot(s.appId, 'owner@shop.example');
    for (const email of ['owner@shop.example', 'Owner@Shop.Example']) {
      refusedAsUnverified(await websiteUser(s, { email, firstName: 'Mallory' }), email);
    }
    expect(await snapshot(s.appId, 'owner@shop.example')).toEqual(before);
  });

  it('events: 403, and no event is stored anywhere in the app', async () => {
    for (const name of names) {
      const before = await snapshot(s.appId, name);
      refusedAsUnverified(await websiteEvent(s, name), name);
      expect(await snapshot(s.appId, name), name).toEqual(before);
    }
    expect(await db()('events').where({ app_id: s.appId, event_name: 'forged' })).toEqual([]);
  });

  it('visits: 403, and neither a visit nor its page_view is stored', async () => {
    for (const name of names) {
      const before = await snapshot(s.appId, name);
      refusedAsUnverified(await websiteVisit(s, name), name);
      expect(await snapshot(s.appId, name), name).toEqual(before);
    }
    expect(await db()('visits').where({ app_id: s.appId }).whereIn('visitor_id', names)).toEqual([]);
  });

  it('identify and push subscriptions: a website user the backend wrote is closed too, by id or alias', async () => {
    const before = await snapshot(s.appId, 'web-1');
    refusedAsUnverified(await identify(s, 'fresh-visitor', 'web-1'), 'identify onto web-1');
    refusedAsUnverified(await identify(s, 'web-1-laptop', 'attacker-1'), 'identify from its alias');
    refusedAsUnverified(await identify(s, 'web-1', 'attacker-2'), 'identify from its id');
    for (const visitor of ['web-1', 'web-1-laptop', 'cust-1', 'cust-1-device']) {
      const res = await web.websiteSubscribePush({
        body: {
          app_id: s.appId,
          visitor_id: visitor,
          subscription: { endpoint: `https://push.example/${visitor}`, keys: { p256dh: 'BPk', auth: 'a1' } },
        },
        ...from,
      });
      refusedAsUnverified(res, `push for ${visitor}`);
    }
    expect(await snapshot(s.appId, 'web-1')).toEqual(before);
    expect(await db()('users').where({ app_id: s.appId }).whereIn('external_id', ['attacker-1', 'attacker-2'])).toEqual(
      [],
    );
  });

  it('a wrong hash is refused the same way', async () => {
    const before = await snapshot(s.appId, 'cust-1');
    refusedAsUnverified(await websiteEvent(s, 'cust-1', { user_hash: s.hash('someone-else') }), 'event');
    refusedAsUnverified(await websiteVisit(s, 'cust-1', { user_hash: 'f'.repeat(64) }), 'visit');
    refusedAsUnverified(await websiteUser(s, { externalId: 'cust-1', userHash: s.hash('cust-1-device') }), 'user');
    expect(await snapshot(s.appId, 'cust-1')).toEqual(before);
  });
});

describe("with the user's hash the same calls succeed", () => {
  it('website users, events and visits reach the user the identifier names', async () => {
    const s = await site();
    const names = await closedUsers(s);
    for (const name of names) {
      const before = await snapshot(s.appId, name);
      const user = await websiteUser(s, {
        externalId: name,
        email: `new-${before.id.slice(-4)}@example.com`,
        userHash: s.hash(name),
      });
      expect(user.response.status, name).toBe(200);
      expect(user.data).toMatchObject({ success: true, user_id: before.id, external_id: before.external_id });
      const event = await websiteEvent(s, name, { user_hash: s.hash(name) });
      expect(event.response.status, name).toBe(200);
      const visit = await websiteVisit(s, name, { user_hash: s.hash(name) });
      expect(visit.response.status, name).toBe(200);
      const after = await snapshot(s.appId, name);
      expect(after.email).toBe(`new-${before.id.slice(-4)}@example.com`);
      expect(after.events).toEqual(expect.arrayContaining([...before.events, event.data!.event_id]));
      expect(after.events).toHaveLength(before.events.length + 2); // the event and the visit's page_view
      expect(after.visits).toEqual([...before.visits, visit.data!.visit_id].sort());
    }
    const keyedByEmail = await websiteUser(s, { email: 'Owner@Shop.example', userHash: s.hash('owner@shop.example') });
    expect(keyedByEmail.response.status).toBe(200);
    expect(keyedByEmail.data!.external_id).toBe('owner@shop.example');
  });

  it('creates new users as verified, so a browser without the hash cannot reach them afterwards', async () => {
    const s = await site();
    expect((await websiteEvent(s, 'member-1', { user_hash: s.hash('member-1') })).response.status).toBe(200);
    expect(await db()('users').where({ app_id: s.appId, external_id: 'member-1' }).first()).toMatchObject({
      created_via: 'website_verified',
    });
    refusedAsUnverified(await websiteEvent(s, 'member-1'), 'later, without the hash');
  });
});

describe('users the website created, and that the backend never wrote, stay open without a hash', () => {
  it('anonymous visitors, form users and identified visitors', async () => {
    const s = await site();
    expect((await websiteVisit(s, 'anon-1')).response.status).toBe(200);
    expect((await websiteEvent(s, 'anon-1')).response.status).toBe(200);
    expect((await websiteUser(s, { email: 'Reader@Example.com' })).response.status).toBe(200);
    expect((await websiteUser(s, { email: 'reader@example.com', firstName: 'Rae' })).response.status).toBe(200);
    expect((await identify(s, 'anon-1', 'member-2')).response.status).toBe(200);
    // The anonymous id is now an alias of member-2, a website user: still open.
    expect((await websiteEvent(s, 'anon-1')).response.status).toBe(200);
    expect((await websiteUser(s, { externalId: 'member-2', email: 'm2@example.com' })).response.status).toBe(200);
    // A REST event for a website user is not a profile write: the user stays open to its browser.
    expect((await s.t.client.eventsTrack({ body: { user_id: 'member-2', event_name: 'paid' } })).response.status).toBe(
      200,
    );
    expect((await websiteEvent(s, 'member-2')).response.status).toBe(200);
  });
});

describe('races with the REST API', () => {
  it('a website event racing the REST API creating the same user is never stored on a REST-created user', async () => {
    const s = await site();
    for (let round = 0; round < 12; round++) {
      const id = `race-event-${round}`;
      const [rest, browser] = await Promise.all([
        s.t.client.usersUpsert({ body: { user_id: id, email: `${id}@example.com` } }),
        websiteEvent(s, id),
      ]);
      expect(rest.response.status).toBe(200);
      expect([200, 403]).toContain(browser.response.status);
      const user = await db()('users').where({ app_id: s.appId, external_id: id }).first();
      const forged = await db()('events').where({ app_id: s.appId, user_id: user.id, event_name: 'forged' });
      if (user.created_via === 'api') expect(forged, id).toEqual([]);
      else expect(forged, id).toHaveLength(browser.response.status === 200 ? 1 : 0);
    }
  });

  it("a website user racing the REST API writing it never ends with the browser's email", async () => {
    const s = await site();
    for (let round = 0; round < 12; round++) {
      const id = `race-user-${round}`;
      const [rest, browser] = await Promise.all([
        s.t.client.usersUpsert({ body: { user_id: id, email: `${id}@backend.example` } }),
        websiteUser(s, { externalId: id }),
      ]);
      expect(rest.response.status).toBe(200);
      expect([200, 403]).toContain(browser.response.status);
      // Either the browser wrote first and the backend's write followed, or the browser was refused.
      const user = await db()('users').where({ app_id: s.appId, external_id: id }).first();
      expect(user.email, id).toBe(`${id}@backend.example`);
    }
  });
});

describe('group commit', () => {
  it('a refused request fails alone; the requests written with it are stored, in one transaction', async () => {
    const s = await site();
    await closedUsers(s);
    const warnings: string[] = [];
    const quiet = createLogger('silent');
    const logger = Object.assign(Object.create(quiet), {
      warn: (_: unknown, message: string) => warnings.push(message),
    }) as Logger;
    const writer = new EventWriter(db(), logger);
    const ctx = { db: db(), ingestor: writer, clock: () => new Date() };
    const send = (source: 'website' | 'api', userId: string, name: string) =>
      ingest(ctx, {
        app: s.t.app,
        source,
        at: '/body',
        bot: false,
        events: [{ id: uuidv7(), user_id: userId, event_name: name }],
      }).then(
        () => 'stored',
        (err) => (err as { code?: string }).code ?? String(err),
      );
    // Submitted in the same turn of the event loop: the writer commits them as one group.
    const outcomes = await Promise.all([
      send('website', 'group-anon-1', 'grouped'),
      send('website', 'cust-1', 'grouped'),
      send('api', 'cust-1', 'grouped'),
      send('website', 'group-anon-2', 'grouped'),
      send('website', 'web-1-laptop', 'grouped'),
    ]);
    expect(outcomes).toEqual(['stored', 'IDENTITY_NOT_VERIFIED', 'stored', 'stored', 'IDENTITY_NOT_VERIFIED']);
    const stored = await db()('events as e')
      .join('users as u', 'u.id', 'e.user_id')
      .where({ 'e.app_id': s.appId, 'e.event_name': 'grouped' })
      .orderBy('u.external_id')
      .pluck('u.external_id');
    expect(stored).toEqual(['cust-1', 'group-anon-1', 'group-anon-2']);
    // The refusal did not make the writer fall back to writing each request on its own.
    expect(warnings).toEqual([]);
  });
});

describe('any identifier the REST API accepts (property-based)', () => {
  it('is closed to browsers without a hash once the backend wrote it', async () => {
    const s = await site();
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 40, unit: 'binary' }), async (id) => {
        const rest = await s.t.client.usersUpsert({ body: { user_id: id, email: 'kept@example.com' } });
        fc.pre(rest.response.status === 200);
        checked++;
        const before = await snapshot(s.appId, id);
        refusedAsUnverified(await websiteEvent(s, id), JSON.stringify(id));
        refusedAsUnverified(await websiteUser(s, { externalId: id }), JSON.stringify(id));
        expect(await snapshot(s.appId, id)).toEqual(before);
      }),
      { numRuns: 25 },
    );
    expect(checked).toBeGreaterThan(10);
  });
});
