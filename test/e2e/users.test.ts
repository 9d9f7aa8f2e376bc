// POST /v1/users, /v1/users/aliases and /v1/users/replace-id through @tally/client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
});
afterAll(() => server?.close());

const db = () => server.db.knex;
const user = (externalId: string, appId = tenant.app.id) =>
  db()('users').where({ app_id: appId, external_id: externalId }).first();

describe('POST /v1/users', () => {
  it('creates a user, then updates it, merging properties (null removes a key) and keeping origin verbatim', async () => {
    const created = await tenant.client.usersUpsert({
      body: {
        user_id: 'u-1',
        email: 'ada@example.com',
        phone: '+4915112345678',
        properties: { plan: 'free', country: 'DE', beta: true },
        origin: { channel: 'ads', campaign: { id: 7, name: 'spring' } },
      },
    });
    expect(created.error).toBeUndefined();
    expect(created.data).toMatchObject({ success: true, external_id: 'u-1', user_id: expect.any(String) });
    const row = await user('u-1');
    expect(created.data!.user_id).toBe(row.id);

    const updated = await tenant.client.usersUpsert({
      body: { user_id: 'u-1', properties: { plan: 'pro', beta: null, seats: 3 } },
    });
    expect(updated.data).toMatchObject({ user_id: row.id, external_id: 'u-1' });
    const after = await user('u-1');
    expect(after.properties).toEqual({ plan: 'pro', country: 'DE', seats: 3 });
    expect(after.email).toBe('ada@example.com');
    expect(after.origin).toEqual({ channel: 'ads', campaign: { id: 7, name: 'spring' } });
  });

  it('updates the same user for events sent before the profile', async () => {
    await tenant.client.eventsTrack({ body: { event_name: 'open', user_id: 'u-early' } });
    const { data } = await tenant.client.usersUpsert({ body: { user_id: 'u-early', email: 'e@example.com' } });
    const row = await user('u-early');
    expect(data!.user_id).toBe(row.id);
    expect(row.event_count).toBe('1');
  });

  it('refuses placeholder ids and unknown fields', async () => {
    const junk = await tenant.client.usersUpsert({ body: { user_id: 'undefined' } });
    expect(junk.response.status).toBe(400);
    expect(junk.error).toMatchObject({ details: { errors: [{ path: '/body/user_id' }] } });
    const unknown = await tenant.client.usersUpsert({ body: { user_id: 'x', name: 'Ada' } as never });
    expect(unknown.response.status).toBe(400);
  });
});

describe('POST /v1/users/aliases', () => {
  it('attaches an alias that then works for events and profile updates', async () => {
    await tenant.client.usersUpsert({ body: { user_id: 'al-main' } });
    const { data } = await tenant.client.usersCreateAlias({ body: { user_id: 'al-main', alias_id: 'device-abc' } });
    expect(data).toMatchObject({ success: true, alias_id: 'device-abc', user_id: 'al-main' });

    await tenant.client.eventsTrack({ body: { event_name: 'tap', user_id: 'device-abc' } });
    const main = await user('al-main');
    expect(main.event_count).toBe('1');
    expect(await user('device-abc')).toBeUndefined();

    const upd = await tenant.client.usersUpsert({ body: { user_id: 'device-abc', properties: { via: 'alias' } } });
    expect(upd.data).toMatchObject({ user_id: main.id, external_id: 'al-main' });
    expect((await user('al-main')).properties).toEqual({ via: 'alias' });
  });

  it('accepts primary_user_id with the internal id, and is idempotent', async () => {
    const { data: created } = await tenant.client.usersUpsert({ body: { user_id: 'al-uuid' } });
    const first = await tenant.client.usersCreateAlias({
      body: { primary_user_id: created!.user_id, alias_id: 'al-uuid-2' },
    });
    expect(first.data).toMatchObject({ user_id: 'al-uuid', alias_id: 'al-uuid-2' });
    const again = await tenant.client.usersCreateAlias({ body: { user_id: 'al-uuid', alias_id: 'al-uuid-2' } });
    expect(again.response.status).toBe(200);
  });

  it('answers 404 for an unknown user, 409 when the alias belongs to someone else, 400 without a user', async () => {
    const unknown = await tenant.client.usersCreateAlias({ body: { user_id: 'nobody', alias_id: 'a-1' } });
    expect(unknown.response.status).toBe(404);
    expect(unknown.error).toMatchObject({ code: 'NOT_FOUND' });
    const badUuid = await tenant.client.usersCreateAlias({ body: { primary_user_id: 'not-a-uuid', alias_id: 'a-1' } });
    expect(badUuid.response.status).toBe(404);

    await tenant.client.usersUpsert({ body: { user_id: 'al-a' } });
    await tenant.client.usersUpsert({ body: { user_id: 'al-b' } });
    await tenant.client.usersCreateAlias({ body: { user_id: 'al-a', alias_id: 'shared-alias' } });
    const taken = await tenant.client.usersCreateAlias({ body: { user_id: 'al-b', alias_id: 'shared-alias' } });
    expect(taken.response.status).toBe(409);
    expect(taken.error).toMatchObject({ code: 'CONFLICT' });
    const otherId = await tenant.client.usersCreateAlias({ body: { user_id: 'al-b', alias_id: 'al-a' } });
    expect(otherId.response.status).toBe(409);

    const neither = await tenant.client.usersCreateAlias({ body: { alias_id: 'lonely' } as never });
    expect(neither.response.status).toBe(400);
  });

  it("never resolves another app's users", async () => {
    const other = await server.createTenant();
    await other.client.usersUpsert({ body: { user_id: 'iso-user' } });
    const res = await tenant.client.usersCreateAlias({ body: { user_id: 'iso-user', alias_id: 'iso-alias' } });
    expect(res.response.status).toBe(404);
  });
});

describe('POST /v1/users/replace-id', () => {
  it('renames a user atomically: history, properties and aliases follow; the old id is then unknown', async () => {
    await tenant.client.usersUpsert({ body: { user_id: 'rn-old', properties: { tier: 'gold' } } });
    await tenant.client.eventsTrack({ body: { event_name: 'pay', user_id: 'rn-old' } });
    await tenant.client.usersCreateAlias({ body: { user_id: 'rn-old', alias_id: 'rn-alias' } });
    const before = await user('rn-old');

    const { data } = await tenant.client.usersReplaceId({ body: { user_id: 'rn-old', new_user_id: 'rn-new' } });
    expect(data).toMatchObject({ success: true, user_id: 'rn-new' });

    const renamed = await user('rn-new');
    expect(renamed).toMatchObject({ id: before.id, properties: { tier: 'gold' }, event_count: '1' });
    expect(await user('rn-old')).toBeUndefined();
    const alias = await tenant.client.usersCreateAlias({ body: { user_id: 'rn-alias', alias_id: 'rn-alias-2' } });
    expect(alias.data).toMatchObject({ user_id: 'rn-new' });

    // The old id behaves as any unknown id: 404 where a user must exist, a new user for events.
    const gone = await tenant.client.usersReplaceId({ body: { user_id: 'rn-old', new_user_id: 'rn-x' } });
    expect(gone.response.status).toBe(404);
    await tenant.client.eventsTrack({ body: { event_name: 'pay', user_id: 'rn-old' } });
    const fresh = await user('rn-old');
    expect(fresh.id).not.toBe(before.id);
    expect((await user('rn-new')).event_count).toBe('1');
  });

  it('answers 409 when the new id is taken and 404 for an unknown user', async () => {
    await tenant.client.usersUpsert({ body: { user_id: 'rn-a' } });
    await tenant.client.usersUpsert({ body: { user_id: 'rn-b' } });
    const taken = await tenant.client.usersReplaceId({ body: { user_id: 'rn-a', new_user_id: 'rn-b' } });
    expect(taken.response.status).toBe(409);
    expect(taken.error).toMatchObject({ code: 'CONFLICT' });
    const missing = await tenant.client.usersReplaceId({ body: { user_id: 'rn-none', new_user_id: 'rn-c' } });
    expect(missing.response.status).toBe(404);
    const junk = await tenant.client.usersReplaceId({ body: { user_id: 'rn-a', new_user_id: 'null' } });
    expect(junk.response.status).toBe(400);
  });
});
