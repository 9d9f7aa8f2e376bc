// Questions answered from the activity rollup, through the API as an integrator asks them (the
// generated client): a question the rollup holds reads it once the rollup is ready in the
// organization's time zone (its `sql` says so) and gives the same rows as raw events; while the
// rollup is being built, or after the time zone changed and before it is rebuilt, the same
// question reads raw events. On PostgreSQL the question runs as the confined sandbox role, so
// this also shows the role may read the rollup. Exactness after random histories:
// test/e2e/rollups.test.ts. Questions on named events, names and hours read the per-event rollup
// (event_slots) once the events before it are counted, raw events until then.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { foldRollups, rebuildRollups } from '../../server/src/analytics/rollups.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const NOW = new Date('2026-03-14T12:00:00Z');
let server: TestServer;
let tenant: Tenant;

beforeAll(async () => {
  server = await startTestServer({}, { clock: () => NOW, jobs: () => false });
  tenant = await server.createTenant();
  // Three users over three days; two purchases carry revenue.
  const at = (day: number, hour: number) => new Date(Date.UTC(2026, 2, day, hour)).toISOString();
  const events = [
    { user_id: 'ann', event_name: 'open', timestamp: at(11, 9) },
    { user_id: 'ann', event_name: 'purchase', timestamp: at(11, 10), properties: { revenue: 20 } },
    { user_id: 'bob', event_name: 'open', timestamp: at(11, 23) },
    { user_id: 'bob', event_name: 'open', timestamp: at(12, 8) },
    { user_id: 'cat', event_name: 'purchase', timestamp: at(13, 7), properties: { amount: 5.5 } },
  ];
  const res = await tenant.client.eventsTrackBatch({ body: { events } });
  expect(res.response.status).toBe(200);
});
afterAll(async () => {
  await server?.close();
});

const ask = async (query: string) => {
  const res = await tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query } });
  expect(res.response.status, JSON.stringify(res.error)).toBe(200);
  return res.data as { data: Record<string, unknown>[]; sql?: string; interpretation: string };
};
const last3 = (rows: Record<string, unknown>[]) => rows.slice(-4, -1);

describe('questions the activity rollup answers', () => {
  it('read the rollup when it is ready, before and after a fold, with the same rows as raw events', async () => {
    const before = await ask('unique users per day for the last 30 days');
    // Active users per day are the dau metric's daily rows: no SQL runs.
    expect(before.sql).toBeUndefined();
    expect(before.interpretation).toContain('daily activity rollup');
    expect(last3(before.data)).toEqual([
      { date: '2026-03-11', value: 2 },
      { date: '2026-03-12', value: 1 },
      { date: '2026-03-13', value: 1 },
    ]);
    await foldRollups(server.db.knex);
    const after = await ask('unique users per day for the last 30 days');
    expect(after.data).toEqual(before.data);
    const revenue = await ask('total revenue this month');
    expect(revenue.sql).toContain('public.app_days');
    expect(revenue.data).toEqual([{ value: 25.5 }]);
    const events = await ask('number of events this week');
    expect(events.sql).toContain('public.app_day_events');
    expect(events.sql).toContain(`'${tenant.app.id}'::uuid`);
    expect(events.data).toEqual([{ value: 5 }]);
    const perDay = await ask('events per day in the last 30 days');
    expect(perDay.sql).toContain('public.activity_deltas');
    expect(last3(perDay.data)).toEqual([
      { date: '2026-03-11', value: 3 },
      { date: '2026-03-12', value: 1 },
      { date: '2026-03-13', value: 1 },
    ]);
  });

  it('read one row a user for questions per user over all time, before and after a fold', async () => {
    for (const fold of [false, true]) {
      if (fold) await foldRollups(server.db.knex);
      const busy = await ask('users with more than 1 events');
      expect(busy.sql).toContain('public.user_totals');
      expect(busy.sql).toContain('public.activity_deltas');
      expect(busy.sql).not.toContain('user_days');
      expect(busy.data).toEqual([
        { user_id: 'ann', value: 2 },
        { user_id: 'bob', value: 2 },
      ]);
      const spenders = await ask('top 2 users by revenue');
      expect(spenders.sql).toContain('public.user_totals');
      expect(spenders.data).toEqual([
        { user_id: 'ann', value: 20 },
        { user_id: 'cat', value: 5.5 },
      ]);
    }
  });

  it('read raw events while the rollup is rebuilt, and the rollup again once it is ready', async () => {
    const knex = server.db.knex;
    await knex('app_rollups').where({ app_id: tenant.app.id }).update({ state: 'building' });
    const building = await ask('unique users per day for the last 30 days');
    // Raw events, read by the users' own key (the question only counts them).
    expect(building.sql).toContain('from public.events x');
    expect(building.sql).not.toContain('user_days');
    expect(last3(building.data)).toEqual([
      { date: '2026-03-11', value: 2 },
      { date: '2026-03-12', value: 1 },
      { date: '2026-03-13', value: 1 },
    ]);
    await rebuildRollups(knex, { pauseFactor: 0, budgetMs: 60_000 });
    expect((await ask('unique users per day for the last 30 days')).sql).toBeUndefined();
    expect((await ask('events per day in the last 30 days')).sql).toContain('public.app_day_events');
  });

  it('read raw events in a time zone the rollup is not kept in, until it is rebuilt there', async () => {
    const knex = server.db.knex;
    await knex('organizations').where({ id: tenant.organization.id }).update({ timezone: 'Pacific/Kiritimati' });
    // Ann's 10:00 UTC purchase and Bob's 23:00 UTC open fall on the next local day at +14:00.
    const moved = await ask('unique users per day for the last 30 days');
    expect(moved.sql).toContain('from public.events x');
    expect(last3(moved.data)).toEqual([
      { date: '2026-03-12', value: 2 },
      { date: '2026-03-13', value: 1 },
      { date: '2026-03-14', value: 0 },
    ]);
    await rebuildRollups(knex, { pauseFactor: 0, budgetMs: 60_000 });
    const rebuilt = await ask('unique users per day for the last 30 days');
    expect(rebuilt.sql).toBeUndefined();
    expect(rebuilt.data).toEqual(moved.data);
  });

  it('leave questions with event names, filters or hours to raw events or the per-event rollup', async () => {
    for (const q of ['purchases per day last 30 days', 'unique users in the last 24 hours', 'events by hour today']) {
      const answer = await ask(q);
      expect(answer.sql, q).not.toContain('user_days');
    }
    // A condition on properties: raw events (periods off the quarter hour: test/unit/language-event-rollup.test.ts).
    for (const q of ['purchases with amount over 5 per day']) {
      const answer = await ask(q);
      expect(answer.sql, q).toContain('from events e');
      expect(answer.sql, q).not.toContain('event_slots');
    }
  });
});

describe('questions the per-event rollup answers', () => {
  it('read event_slots when counted, raw events while existing events are being counted, the same rows', async () => {
    const knex = server.db.knex;
    const top = await ask('top 2 events');
    expect(top.sql).toContain('public.event_slots');
    expect(top.sql).toContain('public.event_deltas');
    expect(top.data).toEqual([
      { event_name: 'open', value: 3 },
      { event_name: 'purchase', value: 2 },
    ]);
    const hours = await ask('number of purchase events by hour of the day');
    expect(hours.sql).toContain('public.event_slots');
    expect(hours.data).toEqual(
      (
        await knex.raw(
          `select extract(hour from created_at at time zone 'Pacific/Kiritimati')::int as hour,
        count(*)::int as value from events where app_id = ? and event_name = 'purchase' group by 1 order by 1`,
          [tenant.app.id],
        )
      ).rows,
    );
    await foldRollups(knex);
    // As after the upgrade that created it: counted again from events, raw events meanwhile.
    await knex('app_rollups')
      .where({ app_id: tenant.app.id })
      .update({ events_state: 'building', events_cursor: null });
    const building = await ask('top 2 events');
    expect(building.sql).toContain('from events e');
    expect(building.sql).not.toContain('event_slots');
    expect(building.data).toEqual(top.data);
    await rebuildRollups(knex, { pauseFactor: 0, budgetMs: 60_000 });
    const ready = await ask('top 2 events');
    expect(ready.sql).toContain('public.event_slots');
    expect(ready.data).toEqual(top.data);
  });
});
