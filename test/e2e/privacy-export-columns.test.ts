// The user export is complete: every column of every table it lists (read from
// information_schema, so a column added later without being exported fails here) is in the
// export with its stored value, and declared in the contract's export models. Every table that
// holds rows of one user is either a section of the export or named below with the reason it is
// not. Records are made the way they are in production: website calls, REST calls, a push.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadContract } from '../../server/src/contract.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const SITE = 'https://shop.example';
const HUMAN_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

/** Export section -> the table its records come from. */
const SECTIONS = {
  user: 'users',
  aliases: 'user_aliases',
  events: 'events',
  visits: 'visits',
  push_subscriptions: 'push_subscriptions',
  deliveries: 'push_deliveries',
} as const;
type Section = keyof typeof SECTIONS;

/**
 * Columns a record does not repeat, because the export states them once for all its records.
 * Nothing else may be left out.
 */
const IMPLIED: Record<string, string> = {
  app_id: 'the export is of one user of one app, the app the request names',
  user_id:
    "every record belongs to the exported user, whose internal id is `user.id` (events carry the user's external id here, as everywhere in the API)",
};

/** Tables holding rows of one user that are not export sections, and why. */
const NOT_SECTIONS: Record<string, string> = {
  campaign_trigger_outbox:
    'a work queue: each row lives until the trigger worker reads it (seconds), and holds only ids of the user and an event that the export already lists',
  activity_deltas:
    "the activity rollup's counts of the user's events per 15 minutes (how many, their revenue), summed from the events the export lists one by one; taken back when they are erased",
  user_days:
    "the activity rollup: per day, the user's events counted and their revenue summed, from the events the export lists one by one; gone once the erasure's negative deltas are folded",
  user_totals:
    "the activity rollup's totals of the user's events and revenue over all time, summed from user_days (from the events the export lists one by one); gone with the user's last user_days row once the erasure's negative deltas are folded",
  user_active_days:
    "the activity rollup's list of the days the user was active, derived from user_days to keep the app's daily figures; gone with the user's last user_days row once the erasure's negative deltas are folded",
  campaign_sends:
    "the campaigns' bookkeeping of which occurrence reached whom; each send made is a delivery, listed with its text (a queued send is erased with the user, see privacy.md)",
};

/** Where a record's key comes from when it is not the column's own name. */
const NESTED: Partial<Record<Section, Record<string, string[]>>> = {
  push_subscriptions: { keys: ['p256dh', 'auth'] },
};

let server: TestServer;
let tenant: Tenant;
let hook: http.Server;

async function columns(table: string): Promise<string[]> {
  const { rows } = await server.db.knex.raw(
    `select column_name from information_schema.columns
     where table_schema = current_schema() and table_name = ? order by column_name`,
    [table],
  );
  return (rows as { column_name: string }[]).map((r) => r.column_name);
}

/** A record's keys as column names (nested objects of NESTED opened). */
function keysOf(section: Section, record: Record<string, unknown>): string[] {
  const nested = NESTED[section] ?? {};
  return Object.keys(record)
    .flatMap((k) => nested[k] ?? [k])
    .sort();
}

function exportedValue(section: Section, record: Record<string, unknown>, column: string): unknown {
  for (const [key, inner] of Object.entries(NESTED[section] ?? {})) {
    if (inner.includes(column)) return (record[key] as Record<string, unknown>)[column];
  }
  return record[column];
}

/** A stored value as JSON carries it. */
function asJson(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  return value;
}

beforeAll(async () => {
  server = await startTestServer({
    SECRET_KEY: 'export-columns-secret-key-0123456789',
    PUSH_ENDPOINT_ALLOWLIST: 'push.example',
  });
  tenant = await server.createTenant();
  await updateApp(server.db.knex, tenant.app.id, {
    website_url: SITE,
    bot_detection: 'advanced',
    advanced_attested: true,
  });
  hook = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  const admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
  const configured = await admin.adminPushConfigure({
    path: { app_id: tenant.app.id },
    body: {
      provider: 'webhook',
      webhook_url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`,
      webhook_secret: 'whsec-export-test',
    },
  });
  expect(configured.error).toBeUndefined();

  // The website first (the visitor is the website's own user), then the backend takes it over.
  const web = server.clientFor();
  const headers = { Origin: SITE, 'User-Agent': HUMAN_UA };
  const visit = await web.websiteLogVisit({
    body: {
      app_id: tenant.app.id,
      visitor_id: 'full',
      visit_url: `${SITE}/pricing?plan=pro`,
      path: '/pricing',
      referrer: 'https://search.example/?q=tally',
      page_title: 'Pricing',
      ua: HUMAN_UA,
      signals: { js_enabled: true, language: 'fr-FR', webdriver: false },
      advanced_signals: { languages: ['fr-FR', 'en'], screen: { width: 1280, height: 800 } },
    },
    headers,
  });
  expect(visit.response.status).toBe(200);
  const subscribed = await web.websiteSubscribePush({
    body: {
      app_id: tenant.app.id,
      visitor_id: 'full',
      subscription: {
        endpoint: 'https://push.example/s/1',
        expirationTime: 1_900_000_000_000,
        keys: { p256dh: 'BPk', auth: 'YXV0aA' },
      },
    },
    headers,
  });
  expect(subscribed.response.status).toBe(200);
  const rest = tenant.client;
  expect(
    (
      await rest.usersUpsert({
        body: {
          user_id: 'full',
          email: 'full@example.com',
          phone: '+33123456789',
          properties: { plan: 'pro' },
          origin: { channel: 'ads' },
        },
      })
    ).response.status,
  ).toBe(200);
  expect((await rest.usersCreateAlias({ body: { user_id: 'full', alias_id: 'full-crm' } })).response.status).toBe(200);
  const event = await rest.eventsTrack({
    body: {
      user_id: 'full',
      event_name: 'purchase',
      properties: { amount: 30 },
      ip: '203.0.113.9',
      ua: 'backend/1.0',
      insert_id: 'p-1',
    },
  });
  expect(event.response.status).toBe(200);
  const pushed = await rest.pushSend({
    body: { user_id: 'full', title: 'Hello', message: 'Your order shipped', action_url: 'https://shop.example/orders' },
  });
  expect(pushed.response.status).toBe(200);
});
afterAll(async () => {
  await server?.close();
  if (hook) await new Promise((r) => hook.close(r));
});

async function exported(): Promise<Record<Section, Record<string, unknown>[]>> {
  const res = await fetch(`${server.url}/v1/users/full-crm/export`, {
    headers: { authorization: `Bearer ${tenant.apiKey}` },
  });
  expect(res.status).toBe(200);
  const body = await res.json();
  return { ...body, user: [body.user] };
}

async function storedRows(section: Section, userId: string): Promise<Record<string, unknown>[]> {
  const table = SECTIONS[section];
  const q = server.db.knex(table).where({ app_id: tenant.app.id });
  if (section === 'user') return q.andWhere({ id: userId });
  return q
    .andWhere({ user_id: userId })
    .orderBy([{ column: 'created_at' }, ...(section === 'aliases' ? [] : [{ column: 'id' }])]);
}

describe('the user export', () => {
  it('holds every column of every table it lists, each with its stored value', async () => {
    const body = await exported();
    const userId = body.user[0]!.id as string;
    for (const section of Object.keys(SECTIONS) as Section[]) {
      const rows = await storedRows(section, userId);
      const records = body[section];
      expect(records.length, section).toBeGreaterThan(0);
      expect(records.length, section).toBe(rows.length);
      const wanted = (await columns(SECTIONS[section])).filter((c) => !(c in IMPLIED));
      for (const record of records) {
        expect(
          keysOf(section, record).filter((k) => !(k in IMPLIED)),
          section,
        ).toEqual(wanted);
      }
      rows.forEach((row, i) => {
        for (const column of wanted) {
          const stored = column === 'event_count' ? Number(row[column]) : asJson(row[column]);
          expect(exportedValue(section, records[i]!, column), `${section}.${column}`).toEqual(stored);
        }
      });
    }
  });

  it('lists the stored personal data the issue named: IPs, user agents, signals, provider ids', async () => {
    const body = await exported();
    expect(body.events.find((e) => e.event_name === 'purchase')).toMatchObject({
      ip: '203.0.113.9',
      ua: 'backend/1.0',
      source: 'api',
      received_at: expect.any(String),
    });
    expect(body.visits[0]).toMatchObject({
      ua: HUMAN_UA,
      ip: expect.any(String),
      signals: { js_enabled: true, language: 'fr-FR', webdriver: false },
      advanced_signals: { languages: ['fr-FR', 'en'], screen: { width: 1280, height: 800 } },
      bot_reason: null,
    });
    expect(body.deliveries[0]).toMatchObject({ provider: 'webhook', status: 'delivered' });
    expect(body.deliveries[0]).toHaveProperty('provider_message_id');
  });

  it('declares every exported field in the contract', async () => {
    const body = await exported();
    const { doc } = loadContract();
    const schemas = (doc as unknown as { components: { schemas: Record<string, SchemaObject> } }).components.schemas;
    const resolve = (s: SchemaObject): SchemaObject => {
      if (s.$ref) return resolve(schemas[s.$ref.split('/').at(-1)!]!);
      if (!s.allOf) return s;
      const parts = s.allOf.map((part) => resolve(part).properties ?? {});
      return { ...s, properties: Object.assign({}, ...parts, s.properties) };
    };
    const exportSchema = schemas.UserExport!;
    for (const section of Object.keys(SECTIONS) as Section[]) {
      const declared = resolve(exportSchema.properties![section]!);
      const item = declared.type === 'array' ? resolve(declared.items!) : declared;
      for (const record of body[section]) {
        for (const key of Object.keys(record)) expect(item.properties, `${section}.${key}`).toHaveProperty(key);
      }
    }
  });

  it('covers every table that holds rows of one user, or names why not', async () => {
    const { rows } = await server.db.knex.raw(
      `select distinct table_name from information_schema.columns
       where table_schema = current_schema() and column_name = 'user_id' order by table_name`,
    );
    const tables = (rows as { table_name: string }[]).map((r) => r.table_name);
    const covered = new Set<string>([...Object.values(SECTIONS), ...Object.keys(NOT_SECTIONS)]);
    expect(tables.filter((t) => !covered.has(t))).toEqual([]);
  });
});

interface SchemaObject {
  $ref?: string;
  type?: string;
  items?: SchemaObject;
  allOf?: SchemaObject[];
  properties?: Record<string, SchemaObject>;
}
