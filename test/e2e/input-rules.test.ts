// The input rules on every surface (REST, website, admin, MCP GETs): NUL bytes and lone UTF-16
// surrogates in any string, keys included; free-form objects at most 32 levels deep (5,000 levels
// is a 400, not a RangeError); finite numbers only. Each refusal is 400 INVALID_REQUEST naming the
// path, and nothing is stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { errorPaths } from '../helpers/errors.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

const NUL = 'contains a NUL character (U+0000), which cannot be stored; remove it';
const SURROGATE = 'contains a lone UTF-16 surrogate (text that is not valid Unicode); send well-formed UTF-8 text';
const INFINITE = 'is not a finite number (a JSON number this large overflows to Infinity)';
const TOO_DEEP = 'is nested more than 32 levels deep; free-form objects may nest at most 32 levels';
const MALFORMED =
  'is not valid percent-encoded UTF-8 (a lone surrogate or a broken %-escape); encode the text as UTF-8';
const SITE = 'https://rules.example';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  await updateApp(server.db.knex, tenant.app.id, { website_url: SITE });
});
afterAll(() => server?.close());

function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

/** A raw request, for what the typed client cannot send (1e999, malformed encodings). */
async function raw(method: string, path: string, body?: string, headers: Record<string, string> = {}) {
  const res = await fetch(server.url + path, {
    method,
    body,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${tenant.apiKey}`, ...headers },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

const eventCount = async (userId: string) =>
  Number(
    (
      await server.db
        .knex('events')
        .join('users', 'users.id', 'events.user_id')
        .where({ 'events.app_id': tenant.app.id, 'users.external_id': userId })
        .count({ n: '*' })
        .first()
    )?.n ?? 0,
  );

describe('NUL bytes and lone surrogates', () => {
  it('refuses a NUL in a field value', async () => {
    const { error, response } = await tenant.client.eventsTrack({
      body: { event_name: 'sign\u0000up', user_id: 'nul-1' },
    });
    expect(response.status).toBe(400);
    expect(error).toMatchObject({
      code: 'INVALID_REQUEST',
      message: `Invalid request: /body/event_name ${NUL}.`,
      details: { errors: [{ path: '/body/event_name', message: NUL }] },
    });
    expect(await eventCount('nul-1')).toBe(0);
  });

  it('refuses NULs and lone surrogates in keys and values of properties, naming each', async () => {
    const { error, response } = await tenant.client.eventsTrack({
      body: {
        event_name: 'x',
        user_id: 'nul-2',
        properties: { 'k\u0000ey': 1, note: 'half \uD83D', nested: { list: ['ok', '\uDE00'] } },
      },
    });
    expect(response.status).toBe(400);
    expect(error?.details).toEqual({
      errors: [
        { path: '/body/properties/k\\u0000ey', message: `is a key that ${NUL}` },
        { path: '/body/properties/note', message: SURROGATE },
        { path: '/body/properties/nested/list/1', message: SURROGATE },
      ],
    });
  });

  it('accepts text with paired surrogates (emoji) and other Unicode', async () => {
    const { data, response } = await tenant.client.eventsTrack({
      body: {
        event_name: 'emoji \uD83D\uDE00',
        user_id: 'nul-3',
        properties: { 'clé \u00e9': '\u4e2d\u6587 \uD83C\uDF89' },
      },
    });
    expect(response.status).toBe(200);
    const row = await server.db.knex('events').where({ app_id: tenant.app.id, id: data!.event_id }).first();
    expect(row.properties).toEqual({ 'clé \u00e9': '\u4e2d\u6587 \uD83C\uDF89' });
  });

  it('refuses the whole batch when one event breaks a rule, naming its index', async () => {
    const { error, response } = await tenant.client.eventsTrackBatch({
      body: {
        events: [
          { event_name: 'ok', user_id: 'nul-4' },
          { event_name: 'ok', user_id: 'nul-4', properties: { bad: 'a\u0000' } },
        ],
      },
    });
    expect(response.status).toBe(400);
    expect(errorPaths(error)).toEqual(['/body/events/1/properties/bad']);
    expect(await eventCount('nul-4')).toBe(0);
  });

  it('checks query values and path values', async () => {
    const list = await tenant.client.audiencesList({ query: { app_id: `${tenant.app.id}\u0000` } });
    expect(list.response.status).toBe(400);
    expect(list.error?.details).toEqual({ errors: [{ path: '/query/app_id', message: NUL }] });

    const exported = await tenant.client.usersExport({ path: { user_id: 'a\u0000b' } });
    expect(exported.response.status).toBe(400);
    expect(exported.error?.details).toEqual({ errors: [{ path: '/path/user_id', message: NUL }] });

    // A lone surrogate cannot be encoded as UTF-8: it arrives as broken percent-escapes.
    const broken = await raw('DELETE', '/v1/users/%ED%A0%80');
    expect(broken.status).toBe(400);
    expect(broken.body.details).toEqual({ errors: [{ path: '/path/user_id', message: MALFORMED }] });
  });

  it('applies on the website endpoints, with CORS headers so the page can read the refusal', async () => {
    const res = await server.clientFor().websiteTrackEvent({
      body: { app_id: tenant.app.id, visitor_id: 'v-1', event_name: 'click', properties: { '\uDBFF': true } },
      headers: { Origin: SITE },
    });
    expect(res.response.status).toBe(400);
    expect(res.error?.details).toEqual({
      errors: [{ path: '/body/properties/\\udbff', message: `is a key that ${SURROGATE}` }],
    });
    expect(res.response.headers.get('access-control-allow-origin')).toBe(SITE);

    const visit = await server.clientFor().websiteLogVisit({
      body: { app_id: tenant.app.id, visitor_id: 'v\u0000', visit_url: `${SITE}/` },
      headers: { Origin: SITE },
    });
    expect(visit.response.status).toBe(400);
    expect(visit.error?.details).toEqual({ errors: [{ path: '/body/visitor_id', message: NUL }] });
  });

  it('applies on the admin API and the MCP GETs, even before authentication is looked at', async () => {
    const admin = await raw('POST', '/admin/v1/organizations', JSON.stringify({ name: 'Org\u0000' }), {
      authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
    });
    expect(admin.status).toBe(400);
    expect(admin.body.details).toEqual({ errors: [{ path: '/body/name', message: NUL }] });

    const mcp = await raw('GET', '/mcp/events?event_name=a%00b', undefined, { 'x-mcp-api-key': tenant.mcpKey });
    expect(mcp.status).toBe(400);
    expect(mcp.body.details).toEqual({ errors: [{ path: '/query/event_name', message: NUL }] });
  });
});

describe('nesting', () => {
  it('accepts 32 levels in properties and origin, and refuses 33 with the path where it goes too deep', async () => {
    const ok = await tenant.client.usersUpsert({
      body: { user_id: 'deep-1', properties: nested(32), origin: nested(32) },
    });
    expect(ok.response.status).toBe(200);

    const deep = await tenant.client.usersUpsert({ body: { user_id: 'deep-2', origin: nested(33) } });
    expect(deep.response.status).toBe(400);
    expect(deep.error?.details).toEqual({ errors: [{ path: `/body/origin${'/a'.repeat(32)}`, message: TOO_DEEP }] });
  });

  it('answers 400 (not a RangeError) to properties nested 5,000 levels deep', async () => {
    const body = `{"event_name":"x","user_id":"deep-3","properties":${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}}`;
    const res = await raw('POST', '/v1/events', body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(res.body.details).toEqual({ errors: [{ path: `/body/properties${'/a'.repeat(32)}`, message: TOO_DEEP }] });
  });

  it('bounds fixed structures too: 5,000 nested arrays in place of events is a 400', async () => {
    const res = await raw('POST', '/v1/events/batch', `{"events":${'['.repeat(5_000)}${']'.repeat(5_000)}}`);
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({
      errors: [{ path: `/body/events${'/0'.repeat(31)}`, message: 'is nested more than 32 levels deep' }],
    });
  });
});

describe('finite numbers', () => {
  it('refuses 1e999 and -1e999 (Infinity once parsed) in bodies', async () => {
    const res = await raw(
      'POST',
      '/v1/events/batch',
      '{"events":[{"event_name":"x","user_id":"inf-1","properties":{"big":1e999}},{"event_name":"x","user_id":"inf-1","properties":{"list":[1,-1e999]}}]}',
    );
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({
      errors: [
        { path: '/body/events/0/properties/big', message: INFINITE },
        { path: '/body/events/1/properties/list/1', message: INFINITE },
      ],
    });
    expect(await eventCount('inf-1')).toBe(0);
  });

  it('keeps large finite numbers exactly as JSON numbers', async () => {
    const res = await raw('POST', '/v1/events', '{"event_name":"x","user_id":"inf-2","properties":{"big":1e308}}');
    expect(res.status).toBe(200);
    const row = await server.db.knex('events').where({ app_id: tenant.app.id, id: res.body.event_id }).first();
    expect(row.properties).toEqual({ big: 1e308 });
  });

  it('refuses numeric query parameters that would become Infinity', async () => {
    const res = await raw('GET', `/v1/audiences?app_id=${tenant.app.id}&limit=1e999`);
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual({ errors: [{ path: '/query/limit', message: 'is not a finite number' }] });
  });
});

describe('formats, as independent validators read the document', () => {
  // The website API takes no key: through the client, as a page calls it (no Authorization header).
  const websiteUser = async (extra: { email: string }) => {
    const res = await server.clientFor().websiteUpsertUser({
      body: { appId: tenant.app.id, websiteUrl: `${SITE}/signup`, ...extra },
      headers: { Origin: SITE },
    });
    return { status: res.response.status, body: { details: res.error?.details } };
  };

  it('takes usual addresses and refuses double dots, a leading dot and hosts without a dot in emails', async () => {
    for (const email of ['Ann.Lee+news@Mail.Example.co.uk', "o'neil@example.com"]) {
      expect((await websiteUser({ email })).status, email).toBe(200);
    }
    for (const email of ['ann..lee@example.com', '.ann@example.com', 'ann@localhost', 'ann@-x.example']) {
      const res = await websiteUser({ email });
      expect(res.status, email).toBe(400);
      expect(res.body.details, email).toEqual({
        errors: [{ path: '/body/email', message: 'must match format "email"' }],
      });
    }
  });

  it('takes a URI of RFC 3986 in the admin API and refuses non-ASCII and spaces in it', async () => {
    const update = (website_url: string) =>
      raw('PATCH', `/admin/v1/apps/${tenant.app.id}`, JSON.stringify({ website_url }), {
        authorization: `Bearer ${TEST_ADMIN_TOKEN}`,
      });
    expect((await update(`${SITE}/path?q=a%20b#top`)).status).toBe(200);
    for (const url of [`${SITE}/caf\u00e9`, `${SITE}/a b`, `${SITE}/a[1]`]) {
      const res = await update(url);
      expect(res.status, url).toBe(400);
      // Also "must be null" and "must match a schema in anyOf": the field is a URI or null.
      expect((res.body.details as { errors: unknown[] }).errors, url).toContainEqual({
        path: '/body/website_url',
        message: 'must match format "uri"',
      });
    }
    expect((await update(SITE)).status).toBe(200);
  });
});
