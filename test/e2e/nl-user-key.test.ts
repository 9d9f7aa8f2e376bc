// Questions that only count users among events read the events table by the users' own key (no
// join to users for every event): the counts must equal those of the ids the app gave, also after
// a user was renamed (replace-id) and events arrived under an alias, and a question that shows or
// matches users' ids must still read them through `users`, and another tenant's events never
// count. Both databases; on PostgreSQL the statement runs as the confined sandbox role, so this
// also shows the role may read it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const NOW = new Date('2026-03-25T12:00:00Z');
let server: TestServer;
let tenant: Tenant;

const at = (day: number, hour = 12) => new Date(Date.UTC(2026, 2, day, hour)).toISOString();

beforeAll(async () => {
  server = await startTestServer({}, { clock: () => NOW, jobs: () => false });
  tenant = await server.createTenant();
  const c = tenant.client;
  const first = [
    { user_id: 'ann', event_name: 'purchase', timestamp: at(3), properties: { revenue: 5 } },
    { user_id: 'ann', event_name: 'purchase', timestamp: at(4) },
    { user_id: 'bob', event_name: 'purchase', timestamp: at(4) },
    { user_id: 'bob', event_name: 'open', timestamp: at(11) },
    { user_id: 'cat', event_name: 'purchase', timestamp: at(12) },
    { user_id: 'dan', event_name: 'open', timestamp: at(12) },
  ];
  expect((await c.eventsTrackBatch({ body: { events: first } })).response.status).toBe(200);
  // Bob is renamed; Cat's later purchases come in under an alias of hers.
  expect((await c.usersReplaceId({ body: { user_id: 'bob', new_user_id: 'robert' } })).response.status).toBe(200);
  expect((await c.usersCreateAlias({ body: { user_id: 'cat', alias_id: 'cat-phone' } })).response.status).toBe(200);
  const later = [
    { user_id: 'robert', event_name: 'purchase', timestamp: at(12) },
    { user_id: 'cat-phone', event_name: 'purchase', timestamp: at(13) },
    { user_id: 'cat', event_name: 'purchase', timestamp: at(18) },
    { user_id: 'ann', event_name: 'purchase', timestamp: at(19) },
  ];
  expect((await c.eventsTrackBatch({ body: { events: later } })).response.status).toBe(200);
  // Another tenant's purchases in the same weeks, by users of the same names and others: never counted.
  const other = await server.createTenant();
  const theirs = [3, 4, 12, 13, 18, 19].flatMap((day) => [
    { user_id: 'ann', event_name: 'purchase', timestamp: at(day) },
    { user_id: `zed-${day}`, event_name: 'purchase', timestamp: at(day) },
    { user_id: `yan-${day}`, event_name: 'open', timestamp: at(day) },
  ]);
  expect((await other.client.eventsTrackBatch({ body: { events: theirs } })).response.status).toBe(200);
});
afterAll(async () => {
  await server?.close();
});

const ask = async (query: string) => {
  const res = await tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query } });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.data as { data: Record<string, unknown>[]; sql?: string };
};

/** Distinct users per ISO week (Monday, UTC) by the ids the app gave, from raw rows. */
async function reference(eventName: string): Promise<Map<string, number>> {
  const { rows } = await server.db.knex.raw(
    `select to_char(date_trunc('week', e.created_at at time zone 'UTC'), 'YYYY-MM-DD') as week,
            count(distinct u.external_id)::int as users
     from events e join users u on u.id = e.user_id
     where e.app_id = ? and e.event_name = ? and not e.is_bot group by 1`,
    [tenant.app.id, eventName],
  );
  return new Map((rows as { week: string; users: number }[]).map((r) => [r.week, r.users]));
}

describe("questions that only count users read events by the users' own key", () => {
  it('count the same users per week as their ids do, after a rename and an alias', async () => {
    const answer = await ask('unique users with a purchase per week');
    expect(answer.sql).toContain('from public.events x');
    const expected = await reference('purchase');
    // Weeks of 2 (Mar 2), 3 (Mar 9: Robert, Cat twice under two ids) and 2 (Mar 16) purchasers.
    expect(expected).toEqual(
      new Map([
        ['2026-03-02', 2],
        ['2026-03-09', 2],
        ['2026-03-16', 2],
      ]),
    );
    const got = new Map(answer.data.map((r) => [String(r.date), Number(r.value)]));
    for (const [week, users] of expected) expect(got.get(week), week).toBe(users);
    expect([...got.values()].reduce((a, b) => a + b, 0)).toBe(6);
  });

  it('count the same users per event name as their ids do', async () => {
    const answer = await ask('unique users by event name this month');
    expect(answer.sql).toContain('from public.events x');
    // Purchases: Ann, Robert (Bob before the rename) and Cat (also under her alias); opens: Bob, Dan.
    expect(answer.data).toEqual([
      { event_name: 'purchase', value: 3 },
      { event_name: 'open', value: 2 },
    ]);
  });

  it("read users' ids through users when the answer shows them", async () => {
    const answer = await ask('top 3 users by number of purchase events this month');
    expect(answer.sql).not.toContain('public.events x');
    expect(answer.data).toEqual([
      { user_id: 'ann', value: 3 },
      { user_id: 'cat', value: 3 },
      { user_id: 'robert', value: 2 },
    ]);
  });
});
