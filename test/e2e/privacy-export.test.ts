// Export (GET /v1/users/{user_id}/export and the admin twin): the streamed body, parsed whole,
// validates against the contract's UserExport schema (the response validator does not see
// streamed bodies) and holds exactly the user's records, oldest first, every one once even when
// many share a timestamp; a user with 10,000 events arrives in several chunks, and the body is
// produced page by page (the first piece is ready before the last page is read); each export is
// in the audit trail, an abandoned one marked as not completed.
import { createTallyClient, type TallyClient } from '@tally/client';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../server/src/context.js';
import { loadContract } from '../../server/src/contract.js';
import { uuidv7 } from '../../server/src/ids.js';
import { EXPORT_PAGE_SIZE, exportUser } from '../../server/src/privacy/privacy.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let a: Tenant;
let b: Tenant;
let admin: TallyClient;
let heavyId: string;
const EVENTS = 10_000;
const BASE = Date.parse('2026-02-01T00:00:00Z');

function validator() {
  const { doc } = loadContract();
  const ajv = new Ajv2020.default({ strict: false, allErrors: true });
  addFormats.default(ajv);
  return ajv.compile({
    $ref: '#/components/schemas/UserExport',
    components: (doc as unknown as { components: unknown }).components,
  });
}

beforeAll(async () => {
  server = await startTestServer();
  a = await server.createTenant();
  b = await server.createTenant();
  admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
  await a.client.eventsTrack({ body: { user_id: 'heavy', event_name: 'first', timestamp: '2026-01-31T00:00:00Z' } });
  await a.client.usersCreateAlias({ body: { user_id: 'heavy', alias_id: 'heavy-alias' } });
  await b.client.eventsTrack({ body: { user_id: 'heavy', event_name: 'other_tenant_event' } });
  const knex = server.db.knex;
  heavyId = (await knex('users').where({ app_id: a.app.id, external_id: 'heavy' }).first()).id;
  // 10,000 more events, 100 to each timestamp (microsecond precision), so pages end inside ties.
  for (let page = 0; page < EVENTS / 1000; page++) {
    await knex('events').insert(
      Array.from({ length: 1000 }, (_, i) => {
        const n = page * 1000 + i;
        return {
          id: uuidv7(),
          app_id: a.app.id,
          user_id: heavyId,
          event_name: n % 2 ? 'view' : 'tap',
          properties: JSON.stringify({ n }),
          created_at: knex.raw(`?::timestamptz + interval '1 microsecond' * ?`, [
            new Date(BASE),
            Math.floor(n / 100) * 7,
          ]),
          received_at: new Date(BASE),
        };
      }),
    );
  }
  await knex('visits').insert({
    id: uuidv7(),
    app_id: a.app.id,
    user_id: heavyId,
    visitor_id: 'heavy-alias',
    visit_url: 'https://example.com/pricing',
    path: '/pricing',
    is_bot: false,
    created_at: new Date(BASE),
  });
  await knex('push_subscriptions').insert({
    id: uuidv7(),
    app_id: a.app.id,
    user_id: heavyId,
    endpoint: 'https://push.example.com/heavy',
    p256dh: 'BPk',
    auth: 'c2VjcmV0',
  });
  await knex('push_deliveries').insert({
    id: uuidv7(),
    app_id: a.app.id,
    user_id: heavyId,
    provider: 'webhook',
    title: 'Hello',
    message: 'Your weekly summary',
    status: 'delivered',
  });
}, 120_000);
afterAll(() => server?.close());

async function readStream(url: string, headers: Record<string, string>) {
  const res = await fetch(url, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  let chunks = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks++;
    text += decoder.decode(value, { stream: true });
  }
  return { text: text + decoder.decode(), chunks };
}

describe('export', () => {
  it('streams every record of the user, valid against the contract, in several chunks', async () => {
    const { text, chunks } = await readStream(`${server.url}/v1/users/heavy-alias/export`, {
      authorization: `Bearer ${a.apiKey}`,
    });
    expect(chunks).toBeGreaterThan(1);
    const body = JSON.parse(text);
    const validate = validator();
    expect(validate(body), JSON.stringify(validate.errors?.slice(0, 3))).toBe(true);
    expect(body.user).toMatchObject({ id: heavyId, external_id: 'heavy' });
    expect(body.aliases.map((x: { alias_id: string }) => x.alias_id)).toEqual(['heavy-alias']);
    expect(body.events).toHaveLength(EVENTS + 1);
    // exactly the stored events, each once, oldest first (ties, to the microsecond, broken by id)
    const stored = await server.db
      .knex('events')
      .where({ app_id: a.app.id, user_id: heavyId })
      .orderBy([{ column: 'created_at' }, { column: 'id' }])
      .pluck('id');
    expect(body.events.map((e: { id: string }) => e.id)).toEqual(stored);
    expect(body.events.every((e: { user_id: string }) => e.user_id === 'heavy')).toBe(true);
    expect(text).not.toContain('other_tenant_event');
    expect(body.visits).toEqual([
      expect.objectContaining({ visit_url: 'https://example.com/pricing', path: '/pricing' }),
    ]);
    expect(body.push_subscriptions).toEqual([
      expect.objectContaining({
        endpoint: 'https://push.example.com/heavy',
        keys: { p256dh: 'BPk', auth: 'c2VjcmV0' },
      }),
    ]);
    expect(body.deliveries).toEqual([
      expect.objectContaining({ title: 'Hello', status: 'delivered', clicked_at: null }),
    ]);
  }, 60_000);

  it('is produced page by page: the first pieces are ready before the later pages are read', async () => {
    const ctx = {
      db: server.db.knex,
      config: server.config,
      logger: pino({ level: 'silent' }),
      clock: () => new Date(),
    } as unknown as ServiceContext;
    let eventPages = 0;
    const count = (q: { sql: string }) => {
      if (/from "events"/.test(q.sql)) eventPages++;
    };
    server.db.knex.on('query', count);
    try {
      const { chunks } = await exportUser(ctx, a.app.id, 'heavy', { kind: 'admin', id: 'test', label: null });
      const first = await chunks.next();
      expect(first.value).toMatch(/^\{"success":true,"user":/);
      expect(eventPages).toBe(0);
      while (!(await chunks.next()).value?.startsWith(',"events":[')) {
        /* the sections before events */
      }
      const firstPage = await chunks.next();
      expect(eventPages).toBe(1);
      expect(JSON.parse(`[${firstPage.value}]`)).toHaveLength(EXPORT_PAGE_SIZE);
      let rest = 0;
      for await (const _ of chunks) rest++;
      expect(rest).toBeGreaterThan(0);
      // every page a separate query: 10 full pages of 1,000, one of 1, none after a short page
      expect(eventPages).toBe(Math.ceil((EVENTS + 1) / EXPORT_PAGE_SIZE));
    } finally {
      server.db.knex.off('query', count);
    }
  });

  it('works through the admin API, and every export is in the audit trail', async () => {
    const { data, error } = await admin.adminPrivacyExportUser({ path: { app_id: a.app.id, user_id: 'heavy' } });
    expect(error).toBeUndefined();
    expect(data?.events).toHaveLength(EVENTS + 1);
    const audit = await admin.adminPrivacyAudit({ path: { app_id: a.app.id }, query: { limit: 10 } });
    const exports = audit.data!.items.filter((i) => i.action === 'user.export');
    expect(exports[0]).toMatchObject({ actor: 'env', actor_kind: 'admin', user_id: 'heavy', completed: true });
    expect(exports[0]!.counts).toEqual({
      users: 1,
      aliases: 1,
      events: EVENTS + 1,
      visits: 1,
      push_subscriptions: 1,
      deliveries: 1,
    });
    expect(exports.find((e) => e.actor === a.apiKeyId)).toMatchObject({ user_id: 'heavy-alias', completed: true });
    expect(JSON.stringify(audit.data)).not.toContain('pricing');
  }, 60_000);

  it('records an export the client abandoned as not completed', async () => {
    const controller = new AbortController();
    // Straight to the server: Prism reads a whole answer before passing it on, so the server would
    // never see the client go.
    const res = await fetch(`${server.directUrl}/v1/users/heavy/export`, {
      headers: { authorization: `Bearer ${a.apiKey}` },
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    let entry: { completed: boolean } | undefined;
    for (let i = 0; i < 100 && !entry; i++) {
      const { data } = await admin.adminPrivacyAudit({ path: { app_id: a.app.id } });
      entry = data!.items.find((x) => x.action === 'user.export' && !x.completed);
      if (!entry) await new Promise((r) => setTimeout(r, 100));
    }
    expect(entry).toMatchObject({ actor: a.apiKeyId, user_id: 'heavy', completed: false });
  });

  it('answers 404 for an unknown user, and for another tenant user', async () => {
    expect((await a.client.usersExport({ path: { user_id: 'nobody' } })).response.status).toBe(404);
    await b.client.eventsTrack({ body: { user_id: 'only-in-b', event_name: 'x' } });
    expect((await a.client.usersExport({ path: { user_id: 'only-in-b' } })).response.status).toBe(404);
    const foreign = await admin.adminPrivacyExportUser({ path: { app_id: uuidv7(), user_id: 'heavy' } });
    expect(foreign.response.status).toBe(404);
  });
});
