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

describe('GET /v1/users/{user_id}', () => {
  it('returns the profile by external id and by alias, with the fields of the MCP user resource', async () => {
    await tenant.client.usersUpsert({
      body: { user_id: 'get-1', email: 'g@example.com', properties: { plan: 'pro' }, origin: { form: 'signup' } },
    });
    await tenant.client.usersCreateAlias({ body: { user_id: 'get-1', alias_id: 'get-1-crm' } });
    await tenant.client.eventsTrack({ body: { event_name: 'open', user_id: 'get-1-crm' } });
    const row = await user('get-1');
    const byId = await tenant.client.usersGet({ path: { user_id: 'get-1' } });
    expect(byId.response.status).toBe(200);
    expect(byId.data).toEqual({
      success: true,
      id: row.id,
      external_id: 'get-1',
      email: 'g@example.com',
      phone: null,
      properties: { plan: 'pro' },
      origin: { form: 'signup' },
      created_at: row.created_at.toISOString(),
      last_active: row.last_active.toISOString(),
      event_count: 1,
    });
    const byAlias = await tenant.client.usersGet({ path: { user_id: 'get-1-crm' } });
    expect(byAlias.data).toEqual(byId.data);
    const mcp = await fetch(`${server.url}/mcp/users/get-1?app_id=${tenant.app.id}`, {
      headers: { 'x-mcp-api-key': tenant.mcpKey },
    });
    expect({ success: true, ...(await mcp.json()) }).toEqual(byId.data);
  });

  it("answers 404 for an unknown user and for another app's user, and 401 without a key", async () => {
    const unknown = await tenant.client.usersGet({ path: { user_id: 'nobody-here' } });
    expect(unknown.response.status).toBe(404);
    expect(unknown.error).toMatchObject({ success: false, code: 'NOT_FOUND' });
    const other = await server.createTenant();
    await other.client.usersUpsert({ body: { user_id: 'theirs', email: 'secret@example.com' } });
    const foreign = await tenant.client.usersGet({ path: { user_id: 'theirs' } });
    expect(foreign.response.status).toBe(404);
    expect(JSON.stringify(foreign.error)).not.toContain('secret@example.com');
    // even with an organization-wide key of another organization
    const wide = await server.createTenant({ orgWide: true });
    expect((await wide.client.usersGet({ path: { user_id: 'theirs' } })).response.status).toBe(404);
    expect((await other.client.usersGet({ path: { user_id: 'theirs' } })).data?.email).toBe('secret@example.com');
    const anonymous = await server.clientFor().usersGet({ path: { user_id: 'theirs' } });
    expect(anonymous.response.status).toBe(401);
    expect(anonymous.error).toMatchObject({ code: 'MISSING_AUTH' });
  });

  it('refuses hostile ids with 400 or finds nothing, never 500', async () => {
    await tenant.client.usersUpsert({ body: { user_id: 'victim' } });
    const get = (raw: string) =>
      fetch(`${server.url}/v1/users/${raw}`, { headers: { authorization: `Bearer ${tenant.apiKey}` } });
    const long = await get('x'.repeat(256));
    expect(long.status).toBe(400);
    expect((await long.json()).details.errors[0].path).toBe('/path/user_id');
    const nul = await get('victim%00');
    expect(nul.status).toBe(400);
    expect(await nul.json()).toMatchObject({ code: 'INVALID_REQUEST' });
    for (const raw of ["victim'%20or%20'1'='1", '%25', 'victim%2F..', encodeURIComponent('ünïcødé ☃'), '*']) {
      const answer = await get(raw);
      expect(answer.status).toBe(404);
      expect(await answer.json()).toMatchObject({ success: false, code: 'NOT_FOUND' });
    }
  });
});
