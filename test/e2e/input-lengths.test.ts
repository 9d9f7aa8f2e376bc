// A maximum length on every string field, declared in the contract (so the docs and the client
// show it): each field takes exactly its limit and refuses one character more with 400
// INVALID_REQUEST naming it. Lengths count characters (code points), not bytes.
import type { TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../../server/src/contract.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { EVENT_FIELD_LIMITS } from '../../server/src/tracking/limits.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

const SITE = 'https://lengths.example';
let server: TestServer;
let tenant: Tenant;
let web: TallyClient;
let admin: TallyClient;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  await updateApp(server.db.knex, tenant.app.id, { website_url: SITE });
  web = server.clientFor();
  admin = server.clientFor(TEST_ADMIN_TOKEN);
  await tenant.client.usersUpsert({ body: { user_id: 'len-user' } });
});
afterAll(() => server?.close());

const text = (n: number, prefix = '') => prefix + 'x'.repeat(n - prefix.length);
const url = (n: number) => text(n, `${SITE}/`);
const email = (n: number) => `${'a'.repeat(n - '@example.com'.length)}@example.com`;
const tooLong = (limit: number) => `must NOT have more than ${limit} characters`;

interface Case {
  field: string;
  limit: number;
  path: string;
  make(n: number): string;
  send(value: string): Promise<{ response: Response; error?: unknown }>;
  /** Status (and code, for errors) when the value is exactly at the limit. */
  atLimit: [number, string?];
}

const site = { headers: { Origin: SITE } };
const cases: Case[] = [
  {
    field: 'users email',
    limit: 320,
    path: '/body/email',
    make: email,
    send: (v) => tenant.client.usersUpsert({ body: { user_id: 'len-1', email: v } }),
    atLimit: [200],
  },
  {
    field: 'users phone',
    limit: 32,
    path: '/body/phone',
    make: (n) => text(n, '+'),
    send: (v) => tenant.client.usersUpsert({ body: { user_id: 'len-1', phone: v } }),
    atLimit: [200],
  },
  {
    field: 'users user_id',
    limit: 255,
    path: '/body/user_id',
    make: (n) => text(n),
    send: (v) => tenant.client.usersUpsert({ body: { user_id: v } }),
    atLimit: [200],
  },
  {
    field: 'event ip',
    limit: 45,
    path: '/body/ip',
    make: (n) => text(n, '2001:db8::'),
    send: (v) => tenant.client.eventsTrack({ body: { event_name: 'x', user_id: 'len-2', ip: v } }),
    atLimit: [200],
  },
  {
    field: 'event ua',
    limit: 1024,
    path: '/body/ua',
    make: (n) => text(n, 'Mozilla/5.0 '),
    send: (v) => tenant.client.eventsTrack({ body: { event_name: 'x', user_id: 'len-2', ua: v } }),
    atLimit: [200],
  },
  {
    field: 'event insert_id',
    limit: 64,
    path: '/body/insert_id',
    make: (n) => text(n),
    send: (v) => tenant.client.eventsTrack({ body: { event_name: 'x', user_id: 'len-2', insert_id: v } }),
    atLimit: [200],
  },
  {
    field: 'event name (in characters: 255 emoji)',
    limit: 255,
    path: '/body/event_name',
    make: (n) => '\u{1F600}'.repeat(n),
    send: (v) => tenant.client.eventsTrack({ body: { event_name: v, user_id: 'len-2' } }),
    atLimit: [200],
  },
  {
    field: 'visit visit_url',
    limit: 2048,
    path: '/body/visit_url',
    make: url,
    send: (v) => web.websiteLogVisit({ body: { app_id: tenant.app.id, visitor_id: 'len-v', visit_url: v }, ...site }),
    atLimit: [200],
  },
  ...(['path', 'referrer'] as const).map(
    (field): Case => ({
      field: `visit ${field}`,
      limit: 2048,
      path: `/body/${field}`,
      make: field === 'path' ? (n) => text(n, '/') : url,
      send: (v) =>
        web.websiteLogVisit({
          body: { app_id: tenant.app.id, visitor_id: 'len-v', visit_url: `${SITE}/`, [field]: v },
          ...site,
        }),
      atLimit: [200],
    }),
  ),
  {
    field: 'visit page_title',
    limit: 512,
    path: '/body/page_title',
    make: (n) => text(n),
    send: (v) =>
      web.websiteLogVisit({
        body: { app_id: tenant.app.id, visitor_id: 'len-v', visit_url: `${SITE}/`, page_title: v },
        ...site,
      }),
    atLimit: [200],
  },
  {
    field: 'visit ua',
    limit: 1024,
    path: '/body/ua',
    make: (n) => text(n, 'Mozilla/5.0 '),
    send: (v) =>
      web.websiteLogVisit({
        body: { app_id: tenant.app.id, visitor_id: 'len-v', visit_url: `${SITE}/`, ua: v },
        ...site,
      }),
    atLimit: [200],
  },
  {
    field: 'website event url',
    limit: 2048,
    path: '/body/url',
    make: url,
    send: (v) =>
      web.websiteTrackEvent({ body: { app_id: tenant.app.id, visitor_id: 'len-v', event_name: 'x', url: v }, ...site }),
    atLimit: [200],
  },
  {
    field: 'website user websiteUrl',
    limit: 2048,
    path: '/body/websiteUrl',
    make: url,
    send: (v) =>
      web.websiteUpsertUser({ body: { appId: tenant.app.id, websiteUrl: v, email: 'w@example.com' }, ...site }),
    atLimit: [200],
  },
  {
    field: 'website user firstName',
    limit: 255,
    path: '/body/firstName',
    make: (n) => text(n),
    send: (v) =>
      web.websiteUpsertUser({
        body: { appId: tenant.app.id, websiteUrl: `${SITE}/`, email: 'w@example.com', firstName: v },
        ...site,
      }),
    atLimit: [200],
  },
  {
    field: 'push title',
    limit: 255,
    path: '/body/title',
    make: (n) => text(n),
    send: (v) => tenant.client.pushSend({ body: { user_id: 'len-user', title: v, message: 'm' } }),
    atLimit: [400, 'PUSH_NOT_CONFIGURED'],
  },
  {
    field: 'push message',
    limit: 4096,
    path: '/body/message',
    make: (n) => text(n),
    send: (v) => tenant.client.pushSend({ body: { user_id: 'len-user', title: 't', message: v } }),
    atLimit: [400, 'PUSH_NOT_CONFIGURED'],
  },
  {
    field: 'push prompt',
    limit: 2000,
    path: '/body/prompt',
    make: (n) => text(n),
    send: (v) => tenant.client.pushSend({ body: { user_id: 'len-user', title: 't', prompt: v } }),
    atLimit: [400, 'PUSH_NOT_CONFIGURED'],
  },
  {
    field: 'push action_url',
    limit: 2048,
    path: '/body/action_url',
    make: url,
    send: (v) => tenant.client.pushSend({ body: { user_id: 'len-user', title: 't', message: 'm', action_url: v } }),
    atLimit: [400, 'PUSH_NOT_CONFIGURED'],
  },
  {
    field: 'audience name',
    limit: 255,
    path: '/body/name',
    make: (n) => text(n),
    send: (v) => tenant.client.audiencesCreate({ body: { app_id: tenant.app.id, name: v, criteria: 'all users' } }),
    atLimit: [200],
  },
  {
    field: 'audience description',
    limit: 2000,
    path: '/body/description',
    make: (n) => text(n),
    send: (v) =>
      tenant.client.audiencesCreate({
        body: { app_id: tenant.app.id, name: 'n', description: v, criteria: 'all users' },
      }),
    atLimit: [200],
  },
  {
    field: 'audience criteria',
    limit: 2000,
    path: '/body/criteria',
    make: (n) => `all users${' '.repeat(n - 'all users'.length)}`,
    send: (v) => tenant.client.audiencesCreate({ body: { app_id: tenant.app.id, name: 'n', criteria: v } }),
    atLimit: [200],
  },
  {
    // A question at the limit, mostly white space: the engine reads it in linear time (patterns that
    // tried every split of a run of spaces once took 40 s on 2,000 characters).
    field: 'analytics question',
    limit: 20_000,
    path: '/body/query',
    make: (n) => `how many users${' \t'.repeat(n)}`.slice(0, n),
    send: (v) => tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query: v } }),
    atLimit: [200],
  },
  {
    field: 'analytics query',
    limit: 20_000,
    path: '/body/query',
    make: (n) => `SELECT count(*) AS n FROM events${' '.repeat(n - 'SELECT count(*) AS n FROM events'.length)}`,
    send: (v) => tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query: v } }),
    atLimit: [200],
  },
  {
    field: 'organization description (admin)',
    limit: 2000,
    path: '/body/description',
    make: (n) => text(n),
    send: (v) => admin.adminOrganizationsCreate({ body: { name: 'Lengths', description: v } }),
    atLimit: [200],
  },
  {
    field: 'app website_url (admin)',
    limit: 2048,
    path: '/body/website_url',
    make: url,
    send: (v) =>
      admin.adminAppsCreate({ body: { organization_id: tenant.organization.id, name: 'L', website_url: v } }),
    atLimit: [200],
  },
];

describe('maximum lengths', () => {
  it.each(cases.map((c) => [c.field, c] as const))('%s', async (_field, c) => {
    const over = await c.send(c.make(c.limit + 1));
    expect(over.response.status).toBe(400);
    expect(over.error).toMatchObject({
      code: 'INVALID_REQUEST',
      details: { errors: [{ path: c.path, message: tooLong(c.limit) }] },
    });

    const at = await c.send(c.make(c.limit));
    expect(at.response.status, JSON.stringify(at.error)).toBe(c.atLimit[0]);
    if (c.atLimit[1]) expect(at.error).toMatchObject({ code: c.atLimit[1] });
  });

  it('refuses over-long path and query values', async () => {
    const exported = await tenant.client.usersExport({ path: { user_id: text(256) } });
    expect(exported.response.status).toBe(400);
    expect(exported.error).toMatchObject({ details: { errors: [{ path: '/path/user_id', message: tooLong(255) }] } });

    const list = await tenant.client.audiencesList({ query: { app_id: text(256) } });
    expect(list.response.status).toBe(400);
    expect(list.error).toMatchObject({ details: { errors: [{ path: '/query/app_id', message: tooLong(255) }] } });
  });
});

describe('the contract', () => {
  it('declares a maximum length on every string a request can carry', () => {
    const { doc } = loadContract();
    // biome-ignore lint/suspicious/noExplicitAny: a generic walk over JSON Schema.
    type Schema = Record<string, any>;
    const schemas = (doc as Schema).components.schemas as Record<string, Schema>;
    const unbounded: string[] = [];
    const walk = (schema: Schema | undefined, where: string, seen: Set<string>, bounded = false): void => {
      if (!schema) return;
      if (schema.$ref) {
        const name = String(schema.$ref).split('/').pop()!;
        if (seen.has(name)) return;
        walk(schemas[name], where, new Set(seen).add(name), bounded);
        return;
      }
      const capped = bounded || schema.maxLength !== undefined;
      for (const key of ['allOf', 'anyOf', 'oneOf']) for (const s of schema[key] ?? []) walk(s, where, seen, capped);
      const isString = schema.type === 'string' || (Array.isArray(schema.type) && schema.type.includes('string'));
      const fixed = schema.enum || schema.const !== undefined || ['date', 'date-time'].includes(schema.format);
      if (isString && !fixed && !capped) unbounded.push(where);
      for (const [k, v] of Object.entries(schema.properties ?? {})) walk(v as Schema, `${where}/${k}`, seen);
      if (schema.items) walk(schema.items, `${where}/items`, seen);
    };
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item as Record<string, Schema>)) {
        for (const p of op.parameters ?? []) walk(p.schema, `${method} ${path} ${p.in} ${p.name}`, new Set());
        walk(op.requestBody?.content?.['application/json']?.schema, `${method} ${path} body`, new Set());
      }
    }
    expect(unbounded).toEqual([]);
  });

  it('gives the ingestion service the same event field lengths', () => {
    const { doc } = loadContract();
    // biome-ignore lint/suspicious/noExplicitAny: reading one schema of the document.
    const props = (doc as any).components.schemas.EventInput.properties;
    for (const [field, limit] of Object.entries(EVENT_FIELD_LIMITS)) {
      expect([field, props[field].maxLength]).toEqual([field, limit]);
    }
  });
});
