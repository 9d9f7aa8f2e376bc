// Idempotency-Key on the REST writes, over HTTP against a started server: a /sendpush retried
// after its answer was lost sends one push (counted at the local WonderPush) and gets the first
// answer; the same key with another body is 409 IDEMPOTENCY_KEY_REUSED; a repeat while the first
// request runs (held at the provider) is 409 CONFLICT with Retry-After: 1; keys are scoped per API
// key and operation; they expire after 24 hours on the server's clock (and the purge job removes
// them); a user's erasure removes the answers that name them. Hostile keys and leases:
// idempotency-keys.test.ts.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../server/src/admin/keys.js';
import { PURGE_IDEMPOTENCY_KEYS } from '../../server/src/jobs/index.js';
import { startFakeWonderPush } from '../helpers/fake-push.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const SECRET_KEY = 'idempotency-test-secret-key-0123456789-abcdef';
const WP_TOKEN = 'wp-access-token-idempotency-4c2d';
const HOUR = 3_600_000;

let server: TestServer;
let wp: Awaited<ReturnType<typeof startFakeWonderPush>>;
/** The provider holds each delivery until the test lets it go (set by hold()). */
let gate: Promise<void> | undefined;
let now = Date.now();

beforeAll(async () => {
  wp = await startFakeWonderPush({ accessToken: WP_TOKEN, hold: () => gate });
  server = await startTestServer(
    { SECRET_KEY, PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1' },
    // The server's "now" moves when the test says; it works only the purge job, on a queue of its own.
    { clock: () => new Date(now), jobs: (name) => name === PURGE_IDEMPOTENCY_KEYS, jobSchema: 'pgboss_idem_test' },
  );
});
afterAll(async () => {
  await server?.close();
  await wp?.close();
});

/** Holds the provider's answers until the returned function is called. */
function hold(): () => void {
  let release!: () => void;
  gate = new Promise<void>((r) => {
    release = () => {
      gate = undefined;
      r();
    };
  });
  return release;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: an answer of any operation, checked field by field
  json: any;
}

async function post(path: string, apiKey: string, body: unknown, key?: string): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

const keys = () => server.db.knex('idempotency_keys');

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function pushTenant(userId: string): Promise<Tenant> {
  const tenant = await server.createTenant();
  expect((await post('/v1/users', tenant.apiKey, { user_id: userId })).status).toBe(200);
  const admin = await fetch(`${server.url}/admin/v1/apps/${tenant.app.id}/push-provider`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${server.config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl }),
  });
  expect(admin.status).toBe(200);
  return tenant;
}

const sentTo = (userId: string) => wp.sent.filter((s) => s.targetUserIds.includes(userId)).length;

describe('POST /v1/sendpush with an Idempotency-Key', () => {
  it('sends one push when the retry follows a lost answer, and the retry gets the first answer', async () => {
    const tenant = await pushTenant('lost-answer');
    const body = { user_id: 'lost-answer', title: 'Order', message: 'Your order shipped' };
    const key = 'retry-after-lost-answer-1';
    const release = hold();
    // The first request reaches the provider, then its client goes away before the answer.
    const payload = JSON.stringify(body);
    const url = new URL(server.url);
    const first = http.request({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: '/v1/sendpush',
      headers: {
        authorization: `Bearer ${tenant.apiKey}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(payload),
        'idempotency-key': key,
      },
    });
    first.on('error', () => {}); // the client hangs up on purpose
    const gone = new Promise<void>((resolve) => first.once('close', () => resolve()));
    first.end(payload);
    await until(async () => sentTo('lost-answer') === 1, 'the provider to receive the push');
    first.destroy();
    await gone;

    // A retry while the first request is still held at the provider: refused, try again in a second.
    const early = await post('/v1/sendpush', tenant.apiKey, body, key);
    expect(early.status).toBe(409);
    expect(early.headers.get('retry-after')).toBe('1');
    expect(early.json).toMatchObject({ code: 'CONFLICT', details: { reason: 'idempotency_key_in_use' } });

    release();
    await until(
      async () => (await keys().where({ app_id: tenant.app.id, key }).first())?.state === 'done',
      'the first answer to be stored',
    );
    const retry = await post('/v1/sendpush', tenant.apiKey, body, key);
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const deliveries = await server.db.knex('push_deliveries').where({ app_id: tenant.app.id });
    expect(deliveries).toHaveLength(1);
    expect(retry.json).toMatchObject({ success: true, deliveryId: deliveries[0].id, recipientCount: 1 });
    // Once more, for good measure: still one push at the provider, still the same answer.
    const again = await post('/v1/sendpush', tenant.apiKey, body, key);
    expect(again.text).toBe(retry.text);
    expect(sentTo('lost-answer')).toBe(1);
  });

  it('answers a concurrent repeat with 409 CONFLICT and Retry-After: 1, then replays the first answer', async () => {
    const tenant = await pushTenant('concurrent');
    const body = { user_id: 'concurrent', title: 'Hi', message: 'Twice at once' };
    const release = hold();
    const first = tenant.client.pushSend({ body, headers: { 'Idempotency-Key': 'concurrent-1' } });
    await until(async () => sentTo('concurrent') === 1, 'the provider to receive the push');
    const second = await tenant.client.pushSend({ body, headers: { 'Idempotency-Key': 'concurrent-1' } });
    expect(second.response.status).toBe(409);
    expect(second.response.headers.get('retry-after')).toBe('1');
    expect(second.error).toMatchObject({ success: false, code: 'CONFLICT' });
    release();
    const done = await first;
    expect(done.response.status).toBe(200);
    expect(done.response.headers.get('idempotent-replayed')).toBeNull();
    const third = await tenant.client.pushSend({ body, headers: { 'Idempotency-Key': 'concurrent-1' } });
    expect(third.data).toEqual(done.data);
    expect(third.response.headers.get('idempotent-replayed')).toBe('true');
    expect(sentTo('concurrent')).toBe(1);
    // Without a key nothing is remembered: each request sends.
    expect((await tenant.client.pushSend({ body })).response.status).toBe(200);
    expect(sentTo('concurrent')).toBe(2);
  });

  it('refuses the same key with another body (409 IDEMPOTENCY_KEY_REUSED), and sends nothing for it', async () => {
    const tenant = await pushTenant('reused');
    const body = { user_id: 'reused', title: 'A', message: 'first' };
    const first = await post('/v1/sendpush', tenant.apiKey, body, 'reused-1');
    expect(first.status).toBe(200);
    const other = await post('/v1/sendpush', tenant.apiKey, { ...body, message: 'second' }, 'reused-1');
    expect(other.status).toBe(409);
    expect(other.json).toMatchObject({ success: false, error: 'Conflict', code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(other.headers.get('retry-after')).toBeNull();
    // The same fields in another order are the same request.
    const reordered = await post(
      '/v1/sendpush',
      tenant.apiKey,
      { message: 'first', title: 'A', user_id: 'reused' },
      'reused-1',
    );
    expect(reordered.status).toBe(200);
    expect(reordered.text).toBe(first.text);
    expect(sentTo('reused')).toBe(1);
  });

  it('replays an answer the operation refused with (404 unknown user); a 400 stores nothing', async () => {
    const tenant = await pushTenant('someone');
    const unknown = { user_id: 'nobody', title: 'A', message: 'b' };
    const first = await post('/v1/sendpush', tenant.apiKey, unknown, 'unknown-user');
    expect(first.status).toBe(404);
    await post('/v1/users', tenant.apiKey, { user_id: 'nobody' });
    const retry = await post('/v1/sendpush', tenant.apiKey, unknown, 'unknown-user');
    expect(retry.status).toBe(404);
    expect(retry.text).toBe(first.text);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');

    // Refused by the contract's validator (no title), then by the operation's own check (no message
    // nor prompt): neither is remembered, so the corrected request runs under the same key.
    for (const body of [
      { user_id: 'someone', message: 'b' },
      { user_id: 'someone', title: 'A' },
    ]) {
      const invalid = await post('/v1/sendpush', tenant.apiKey, body, 'invalid-first');
      expect(invalid.status).toBe(400);
      expect(await keys().where({ app_id: tenant.app.id, key: 'invalid-first' }).first()).toBeUndefined();
    }
    const fixed = await post(
      '/v1/sendpush',
      tenant.apiKey,
      { user_id: 'someone', title: 'A', message: 'b' },
      'invalid-first',
    );
    expect(fixed.status).toBe(200);
    expect(sentTo('someone')).toBe(1);
  });
});

describe('the scope of a key', () => {
  it('is one API key and one operation: other keys of the app, other apps and other operations do not collide', async () => {
    const a = await server.createTenant();
    const a2 = (await createKey(server.db.knex, a.app, { kind: 'rest' })).secret;
    const b = await server.createTenant();
    const key = 'shared-value';
    const one = await post('/v1/users', a.apiKey, { user_id: 'one' }, key);
    const two = await post('/v1/users', a2, { user_id: 'two' }, key);
    const three = await post('/v1/users', b.apiKey, { user_id: 'three' }, key);
    expect([one.status, two.status, three.status]).toEqual([200, 200, 200]);
    for (const answer of [one, two, three]) expect(answer.headers.get('idempotent-replayed')).toBeNull();
    // Another operation with the same key and app key runs too.
    const alias = await post('/v1/users/aliases', a.apiKey, { user_id: 'one', alias_id: 'one-crm' }, key);
    expect(alias.status).toBe(200);
    expect(alias.json).toMatchObject({ alias_id: 'one-crm', user_id: 'one' });
    const rename = await post('/v1/users/replace-id', a.apiKey, { user_id: 'one', new_user_id: 'uno' }, key);
    expect(rename.status).toBe(200);
    const users = await server.db.knex('users').whereIn('app_id', [a.app.id, b.app.id]).orderBy('external_id');
    expect(users.map((u) => u.external_id)).toEqual(['three', 'two', 'uno']);
    // Each key still replays its own first answer.
    expect((await post('/v1/users', a2, { user_id: 'two' }, key)).text).toBe(two.text);
    expect((await post('/v1/users', b.apiKey, { user_id: 'three' }, key)).text).toBe(three.text);
    // A repeat of the rename answers as the first time, though the old id is gone now.
    const renameAgain = await post('/v1/users/replace-id', a.apiKey, { user_id: 'one', new_user_id: 'uno' }, key);
    expect(renameAgain.status).toBe(200);
    expect(renameAgain.text).toBe(rename.text);
    const reused = await post('/v1/users', a.apiKey, { user_id: 'other' }, key);
    expect(reused.status).toBe(409);
    expect(reused.json.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it('covers POST /v1/audiences: a repeat creates no second audience', async () => {
    const tenant = await server.createTenant();
    const body = { app_id: tenant.app.id, name: 'Buyers', criteria: 'all users' };
    const first = await post('/v1/audiences', tenant.apiKey, body, 'audience-1');
    expect(first.status).toBe(200);
    const again = await post('/v1/audiences', tenant.apiKey, body, 'audience-1');
    expect(again.text).toBe(first.text);
    const other = await post('/v1/audiences', tenant.apiKey, { ...body, name: 'Other' }, 'audience-1');
    expect(other.status).toBe(409);
    expect(other.json.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await server.db.knex('audiences').where({ app_id: tenant.app.id })).toHaveLength(1);
  });
});

describe('the 24-hour window', () => {
  it('forgets a key 24 hours after its first request (server clock), and the purge job removes it', async () => {
    const tenant = await server.createTenant();
    const first = await post('/v1/users', tenant.apiKey, { user_id: 'day', properties: { n: 1 } }, 'day-key');
    expect(first.status).toBe(200);
    now += 23 * HOUR;
    const within = await post('/v1/users', tenant.apiKey, { user_id: 'day', properties: { n: 2 } }, 'day-key');
    expect(within.status).toBe(409);
    expect(
      (await post('/v1/users', tenant.apiKey, { user_id: 'day', properties: { n: 1 } }, 'day-key')).headers.get(
        'idempotent-replayed',
      ),
    ).toBe('true');
    const other = await post('/v1/users', tenant.apiKey, { user_id: 'other' }, 'other-key');
    expect(other.status).toBe(200);
    now += HOUR + 1000;
    const after = await post('/v1/users', tenant.apiKey, { user_id: 'day', properties: { n: 2 } }, 'day-key');
    expect(after.status).toBe(200);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    const user = await server.db.knex('users').where({ app_id: tenant.app.id, external_id: 'day' }).first();
    expect(user.properties).toEqual({ n: 2 });

    // 23 hours on, 'other-key' is 24 hours old and goes; the renewed 'day-key' stays until its own day is over.
    now += 23 * HOUR;
    const id = await server.jobs.runNow(PURGE_IDEMPOTENCY_KEYS);
    await until(async () => (await server.jobs.state(PURGE_IDEMPOTENCY_KEYS, id)) === 'completed', 'the purge');
    expect(await keys().where({ app_id: tenant.app.id }).pluck('key')).toEqual(['day-key']);
    now += 2 * HOUR;
    const id2 = await server.jobs.runNow(PURGE_IDEMPOTENCY_KEYS);
    await until(async () => (await server.jobs.state(PURGE_IDEMPOTENCY_KEYS, id2)) === 'completed', 'the purge');
    expect(await keys().where({ app_id: tenant.app.id })).toHaveLength(0);
  });
});

describe('erasure', () => {
  it("removes the stored answers that name the user, by any of their identifiers, and keeps the others'", async () => {
    const tenant = await server.createTenant();
    const api = tenant.apiKey;
    expect((await post('/v1/users', api, { user_id: 'ada', email: 'ada@example.com' }, 'e-1')).status).toBe(200);
    expect((await post('/v1/users/aliases', api, { user_id: 'ada', alias_id: 'ada-crm' }, 'e-2')).status).toBe(200);
    expect((await post('/v1/users/replace-id', api, { user_id: 'ada', new_user_id: 'ada-2' }, 'e-3')).status).toBe(200);
    // named only by the alias
    expect((await post('/v1/users', api, { user_id: 'ada-crm', phone: '+33612345678' }, 'e-4')).status).toBe(200);
    expect((await post('/v1/users', api, { user_id: 'bob', email: 'bob@example.com' }, 'e-5')).status).toBe(200);
    expect(await keys().where({ app_id: tenant.app.id })).toHaveLength(5);

    const erased = await fetch(`${server.url}/v1/users/ada-2`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${api}` },
    });
    expect(erased.status).toBe(200);
    expect(await keys().where({ app_id: tenant.app.id }).pluck('key')).toEqual(['e-5']);
    const left = JSON.stringify(await keys().where({ app_id: tenant.app.id }));
    // (not the bare letters: a hexadecimal id may hold them)
    for (const trace of ['"ada"', 'ada@example.com', 'ada-crm', 'ada-2', '+33612345678'])
      expect(left).not.toContain(trace);
    // The same key now runs again (nothing was remembered): the user is created anew.
    const again = await post('/v1/users', api, { user_id: 'ada', email: 'ada@example.com' }, 'e-1');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });
});
