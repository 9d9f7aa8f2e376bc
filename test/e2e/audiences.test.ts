// POST and GET /v1/audiences through @tally/client: every form of the criteria language on a
// hand-built set of users and events (members checked through audienceMembers and user_count),
// the stored definition, dynamic counts, list pagination and 404, QUERY_NOT_UNDERSTOOD with
// examples. The language-model path is in audiences-llm.test.ts; the users and events are in
// audiences-helpers.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audienceMembers } from '../../server/src/audiences/audiences.js';
import { loadUsers, serviceContext } from '../fixtures/audience-data.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';
import { USERS } from './audiences-helpers.js';

let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  await loadUsers(tenant.client, server.db.knex, tenant.app.id, USERS);
});
afterAll(() => server?.close());

const db = () => server.db.knex;

async function create(criteria: string, t: Tenant = tenant) {
  return t.client.audiencesCreate({ body: { app_id: t.app.id, name: criteria.slice(0, 80), criteria } });
}

async function membersOf(audienceId: string, t: Tenant = tenant): Promise<string[]> {
  const page = await audienceMembers(serviceContext(server), t.app.id, audienceId, { limit: 100, offset: 0 });
  expect(page.total).toBe(page.users.length);
  return page.users.map((u) => u.user_id).sort();
}

const FORMS: [string, string[]][] = [
  // did / did not, counts and windows; bot events never count
  ['users who did purchase', ['ann', 'ben']],
  ['users who did purchase at least 3 times in the last 30 days', ['ann']],
  ['users who did purchase at least 4 times', ['ann']],
  ['users who did purchase at most 1 time', ['ben']],
  ['users who did purchase more than 1 time in the last 30 days', ['ann']],
  ['users who did purchase fewer than 2 times', ['ben']],
  ['users who did purchase between 2 and 3 times in the last 30 days', ['ann']],
  ['users who did purchase exactly 3 times in the last 30 days', ['ann']],
  ['users who did not purchase in the last 7 days', ['cat', 'dan', 'eve', 'fay']],
  ['users who did not do signup since 2026-01-01', ['cat']],
  ["users who did 'Add To Cart'", ['fay']],
  ['users who did "add to cart" in the last 7 days', ['fay']],
  // activity
  ['users who have not been active for 14 days', ['dan', 'eve']],
  ['users who have not been active in the last 14 days', ['cat', 'dan', 'eve']],
  ['users who were active in the last 3 days', ['ann', 'ben']],
  ['users who are inactive for 2 weeks', ['dan', 'eve']],
  // properties
  ['users whose plan is premium', ['ann', 'dan']],
  ['users whose plan is not premium', ['ben', 'cat', 'eve', 'fay']],
  ['users whose plan is PRO', ['cat']],
  ['users whose city is New York', ['ann']],
  ['users whose tags contain b', ['ann']],
  ['users whose score is greater than 6', ['ann', 'dan']],
  ['users whose score < 6', ['ben']],
  ['users whose score is at least 10', ['ann', 'dan']],
  ['users whose score exists', ['ann', 'ben', 'dan']],
  ['users whose plan is not set', ['eve', 'fay']],
  ['users whose plan is one of free, pro', ['ben', 'cat']],
  ['users whose email ends with @shop.io', ['ann', 'cat']],
  // has email / phone
  ['users who have an email', ['ann', 'cat']],
  ['users who have no email', ['ben', 'dan', 'eve', 'fay']],
  ['users with a phone number', ['ben']],
  // first seen
  ['users who signed up in the last 7 days', ['ben', 'cat']],
  ['users who signed up between 2026-03-01 and 2026-03-31', ['fay']],
  ['users who signed up before 2026-04-01', ['fay']],
  ['users who signed up on 2026-03-10', ['fay']],
  // and / or / parentheses / not
  ['users who did purchase and (whose plan is premium or whose score is less than 6)', ['ann', 'ben']],
  ['users who did purchase and whose plan is premium or who signed up on 2026-03-10', ['ann', 'fay']],
  ['not (users who did purchase or whose plan is premium)', ['cat', 'eve', 'fay']],
];

describe('POST /v1/audiences: each form of the language selects exactly its members', () => {
  it.each(FORMS)('%s', async (criteria, members) => {
    const { data, error } = await create(criteria);
    expect(error).toBeUndefined();
    expect(data).toMatchObject({ success: true, query_method: 'rules', confidence: 1, user_count: members.length });
    expect(await membersOf(data!.audience_id)).toEqual(members);
  });
});

describe('POST /v1/audiences: what is stored and answered', () => {
  it('stores the criteria, the definition (AST), the method, confidence and count', async () => {
    const criteria = 'users who did purchase at least 3 times in the last 30 days';
    const { data } = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'Loyal buyers', description: 'Frequent buyers', criteria },
    });
    expect(data).toEqual({
      success: true,
      audience_id: expect.any(String),
      name: 'Loyal buyers',
      user_count: 1,
      created_at: expect.any(String),
      message: expect.stringMatching(
        /^Audience created with 1 user, understood as: users who did "purchase" event at least 3 times in the last 30 days \(today and the 29 days before, from local midnight: \d{4}-\d\d-\d\d to \d{4}-\d\d-\d\d\)\.$/,
      ),
      interpretation: expect.stringContaining('users who did "purchase" event at least 3 times in the last 30 days'),
      query_method: 'rules',
      confidence: 1,
    });
    const row = await db()('audiences').where({ app_id: tenant.app.id, id: data!.audience_id }).first();
    expect(row).toMatchObject({
      name: 'Loyal buyers',
      description: 'Frequent buyers',
      criteria,
      query_method: 'rules',
      confidence: 1,
      user_count: '1',
      sql: null,
      definition: {
        version: 2,
        where: {
          type: 'did',
          events: ['purchase'],
          filters: [],
          times: { gte: 3 },
          period: { from: { unit: 'day', offset: -29 }, to: { unit: 'day', offset: 1 }, label: 'the last 30 days' },
        },
      },
    });
  });

  it('keeps relative times relative: members follow the clock of each evaluation', async () => {
    const { data } = await create('users who did purchase in the last 5 days');
    const ctx = serviceContext(server);
    const now = Date.now();
    const later = serviceContext(server, () => new Date(now + 3 * 86_400_000)); // three days on
    expect((await audienceMembers(ctx, tenant.app.id, data!.audience_id, { limit: 10, offset: 0 })).total).toBe(2);
    const page = await audienceMembers(later, tenant.app.id, data!.audience_id, { limit: 10, offset: 0 });
    // "the last 5 days" are then that day and the 4 before: ann's purchase (4 days before) is in
    // them, ben's (5 days before) is not.
    expect(page.users.map((u) => u.user_id)).toEqual(['ann']);
  });

  it('refuses criteria it cannot understand with examples it can', async () => {
    const { error, response } = await create('users who like cats');
    expect(response.status).toBe(400);
    expect(error).toMatchObject({
      code: 'QUERY_NOT_UNDERSTOOD',
      details: {
        examples: expect.any(Array),
        reason: expect.stringContaining('cats'),
        unknown: ['cats'],
        suggestions: {
          events: expect.arrayContaining(['purchase']),
          properties: expect.any(Array),
          rephrasings: expect.any(Array),
        },
      },
    });
    const examples = (error!.details as { examples: string[] }).examples;
    expect(examples.length).toBeGreaterThan(3);
    for (const example of examples) {
      const { data, error: e } = await create(example);
      expect(e, example).toBeUndefined();
      expect(data?.query_method).toBe('rules');
    }
  });

  it('answers 404 for an app the key may not use, and 400 for a missing criteria', async () => {
    const other = await server.createTenant();
    const { response } = await tenant.client.audiencesCreate({
      body: { app_id: other.app.id, name: 'x', criteria: 'users who did purchase' },
    });
    expect(response.status).toBe(404);
    const bad = await tenant.client.audiencesCreate({ body: { app_id: tenant.app.id, name: 'x' } as never });
    expect(bad.response.status).toBe(400);
  });
});

describe('audienceMembers', () => {
  it('pages through current members in first-seen order, and 404s for another app', async () => {
    const { data } = await create('users whose plan is set');
    const ctx = serviceContext(server);
    const first = await audienceMembers(ctx, tenant.app.id, data!.audience_id, { limit: 2, offset: 0 });
    const second = await audienceMembers(ctx, tenant.app.id, data!.audience_id, { limit: 2, offset: 2 });
    expect(first.total).toBe(4);
    expect(second.total).toBe(4);
    expect(first.users.map((u) => u.user_id)).toEqual(['ann', 'dan']); // first seen 40 and 20 days ago
    expect(second.users.map((u) => u.user_id)).toEqual(['ben', 'cat']);
    expect(first.users[0]).toEqual({
      user_id: 'ann',
      email: 'ann@shop.io',
      phone: null,
      last_active: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    const other = await server.createTenant();
    await expect(audienceMembers(ctx, other.app.id, data!.audience_id, { limit: 2, offset: 0 })).rejects.toMatchObject({
      status: 404,
    });
    await expect(audienceMembers(ctx, tenant.app.id, 'nope', { limit: 2, offset: 0 })).rejects.toMatchObject({
      status: 404,
    });
  });
});

describe('GET /v1/audiences', () => {
  it('pages newest first with totals, and fills the default limit', async () => {
    const t = await server.createTenant();
    const ids: string[] = [];
    for (const name of ['one', 'two', 'three']) {
      const { data } = await t.client.audiencesCreate({ body: { app_id: t.app.id, name, criteria: 'all users' } });
      ids.push(data!.audience_id);
    }
    const page1 = await t.client.audiencesList({ query: { app_id: t.app.id, limit: 2 } });
    expect(page1.data).toMatchObject({
      success: true,
      pagination: { total: 3, limit: 2, offset: 0, has_more: true },
    });
    expect(page1.data!.audiences.map((a) => a.name)).toEqual(['three', 'two']);
    expect(page1.data!.audiences[0]).toEqual({
      audience_id: ids[2],
      name: 'three',
      description: null,
      user_count: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const page2 = await t.client.audiencesList({ query: { app_id: t.app.id, limit: 2, offset: 2 } });
    expect(page2.data!.audiences.map((a) => a.audience_id)).toEqual([ids[0]]);
    expect(page2.data!.pagination).toEqual({ total: 3, limit: 2, offset: 2, has_more: false });
    const all = await t.client.audiencesList({ query: { app_id: t.app.id } });
    expect(all.data!.pagination).toEqual({ total: 3, limit: 50, offset: 0, has_more: false });
  });

  it('answers 404 for an app the key may not use and 400 for a limit over 100', async () => {
    const other = await server.createTenant();
    const foreign = await tenant.client.audiencesList({ query: { app_id: other.app.id } });
    expect(foreign.response.status).toBe(404);
    expect(foreign.error).toMatchObject({ code: 'NOT_FOUND' });
    const big = await tenant.client.audiencesList({ query: { app_id: tenant.app.id, limit: 101 } });
    expect(big.response.status).toBe(400);
  });

  it('refreshes counts older than a minute when read, and shows when in updated_at', async () => {
    const t = await server.createTenant();
    await t.client.usersUpsert({ body: { user_id: 'v1', properties: { vip: true } } });
    const { data } = await t.client.audiencesCreate({
      body: { app_id: t.app.id, name: 'VIPs', criteria: 'users whose vip is true' },
    });
    expect(data!.user_count).toBe(1);
    await t.client.usersUpsert({ body: { user_id: 'v2', properties: { vip: true } } });

    // Counted 10 seconds ago: still fresh, the stored count is shown.
    const fresh = new Date(Date.now() - 10_000);
    await db()('audiences').where({ id: data!.audience_id }).update({ counted_at: fresh, updated_at: fresh });
    const before = await t.client.audiencesList({ query: { app_id: t.app.id } });
    expect(before.data!.audiences[0]).toMatchObject({ user_count: 1, updated_at: fresh.toISOString() });

    // Counted two minutes ago: recounted on read.
    const stale = new Date(Date.now() - 120_000);
    await db()('audiences').where({ id: data!.audience_id }).update({ counted_at: stale, updated_at: stale });
    const after = await t.client.audiencesList({ query: { app_id: t.app.id } });
    expect(after.data!.audiences[0]!.user_count).toBe(2);
    expect(Date.parse(after.data!.audiences[0]!.updated_at)).toBeGreaterThan(stale.getTime() + 60_000);
    const row = await db()('audiences').where({ id: data!.audience_id }).first();
    expect(row.user_count).toBe('2');
  });
});
