// Migration 026 on a database whose activity rollup already holds rows: it fills the per-app daily
// rows (app_days, app_day_gaps, app_periods) from user_days, and they equal the same figures
// counted here from user_days by reference SQL; afterwards the triggers keep them equal through a
// fold, an erasure-like deletion and a recount, and every metric read through them equals raw events.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeMetric, type MetricName } from '../../server/src/analytics/metrics.js';
import { foldRollups } from '../../server/src/analytics/rollups.js';
import { loadConfig } from '../../server/src/config.js';
import type { ServiceContext } from '../../server/src/context.js';
import { uuidv7 } from '../../server/src/ids.js';
import type { Database } from '../../server/src/storage/db.js';
import * as m026 from '../../server/src/storage/migrations/026-activity-days.js';
import { insertApp, insertOrganization } from '../../server/src/storage/tenancy.js';
import type { Unit } from '../../server/src/time.js';
import { openOwnDatabase } from '../helpers/own-database.js';

let database: Database;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ database, close } = await openOwnDatabase('tally_m026'));
});
afterAll(() => close?.());

/** What the three tables must hold, counted from user_days; each query lists rows that differ. */
const ACTIVE = 'select app_id, user_id, day from user_days where events > 0';
const FIRSTS = `select a.app_id, a.user_id, min(a.day) as f from (${ACTIVE}) a group by 1, 2`;
const PERIODS = `select distinct a.app_id, a.user_id, u.unit, date_trunc(u.unit, a.day::timestamp)::date as start
  from (${ACTIVE}) a cross join (values ('week'), ('month')) u(unit)`;
const REFERENCE = {
  days: `select d.app_id, d.day, d.active, d.paying, d.revenue,
           (select count(*) from (${FIRSTS}) f where f.app_id = d.app_id and f.f = d.day)::int as first_users,
           (select count(*) from (${FIRSTS}) f where f.app_id = d.app_id and f.f = d.day
              and exists (select 1 from (${ACTIVE}) a where a.app_id = f.app_id and a.user_id = f.user_id and a.day = f.f + 1))::int as first_next
         from (select app_id, day, count(*) filter (where events > 0)::int as active,
                 count(*) filter (where revenue_events > 0)::int as paying,
                 coalesce(sum(revenue) filter (where revenue_events <> 0), 0)::numeric as revenue
               from user_days group by 1, 2) d`,
  gaps: `select app_id, p as day, gap::smallint as gap, count(*)::int as pairs from (
           select app_id, lag(day) over w as p, day - lag(day) over w as gap from (${ACTIVE}) a
           window w as (partition by app_id, user_id order by day)) s where gap < 30 group by 1, 2, 3`,
  periods: `select p.app_id, p.unit, p.start, count(*)::int as active,
              (select count(distinct user_id) from user_days x where x.app_id = p.app_id and x.revenue_events > 0
                and date_trunc(p.unit, x.day::timestamp)::date = p.start)::int as paying,
              count(*) filter (where exists (select 1 from (${PERIODS}) n where n.app_id = p.app_id and n.user_id = p.user_id
                and n.unit = p.unit and n.start = (p.start + ('1 ' || p.unit)::interval)::date))::int as continued,
              count(*) filter (where p.start = (select min(o.start) from (${PERIODS}) o
                where o.app_id = p.app_id and o.user_id = p.user_id and o.unit = p.unit))::int as first_users,
              count(*) filter (where p.start = (select min(o.start) from (${PERIODS}) o
                where o.app_id = p.app_id and o.user_id = p.user_id and o.unit = p.unit)
                and exists (select 1 from (${PERIODS}) n where n.app_id = p.app_id and n.user_id = p.user_id
                and n.unit = p.unit and n.start = (p.start + ('1 ' || p.unit)::interval)::date))::int as first_next
            from (${PERIODS}) p group by 1, 2, 3`,
};
const NONZERO = 'active <> 0 or paying <> 0 or first_users <> 0 or first_next <> 0';
const KEPT = {
  days: `select app_id, day, active, paying, revenue, first_users, first_next from app_days where ${NONZERO} or revenue <> 0`,
  gaps: 'select app_id, day, gap, pairs from app_day_gaps where pairs <> 0',
  periods: `select app_id, unit, start, active, paying, continued, first_users, first_next from app_periods
            where ${NONZERO} or continued <> 0`,
};

async function differences(db: Database['knex']): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const name of Object.keys(REFERENCE) as (keyof typeof REFERENCE)[]) {
    const both = `(${REFERENCE[name]} except ${KEPT[name]}) union all (${KEPT[name]} except ${REFERENCE[name]})`;
    const result = await db.raw(`select count(*)::int as n from (${both}) x`);
    out[name] = Number(result.rows[0].n);
  }
  return out;
}

async function writeEvents(db: Database['knex'], appId: string, users: string[], salt: number): Promise<void> {
  const rows = [];
  for (const [i, id] of users.entries()) {
    for (let d = 0; d < 40; d++) {
      if ((i * 5 + d * 3 + salt) % 3 === 0 || (d > 10 && d < 20 && i % 2 === 0)) continue;
      const at = new Date(Date.parse('2026-02-10T00:00:00Z') + d * 86_400_000 + ((i * 37 + d * 53) % 1440) * 60_000);
      const revenue = (i + d + salt) % 4 === 0 ? { revenue: (i % 5) + 0.5 } : {};
      rows.push({
        id: uuidv7(),
        app_id: appId,
        user_id: id,
        event_name: 'revenue' in revenue ? 'purchase' : 'session',
        properties: JSON.stringify(revenue),
        source: 'api',
        is_bot: false,
        created_at: at,
        received_at: at,
      });
    }
  }
  for (let i = 0; i < rows.length; i += 500) await db('events').insert(rows.slice(i, i + 500));
}

const METRICS: MetricName[] = ['dau', 'mau', 'retention', 'revenue', 'arpu', 'conversion', 'churn'];
const UNITS: Unit[] = ['day', 'week', 'month'];

async function metrics(ctx: ServiceContext, appId: string, source?: 'raw') {
  const out: Record<string, unknown> = {};
  for (const granularity of UNITS) {
    for (const metric of METRICS) {
      out[`${metric}/${granularity}`] = await computeMetric(ctx, {
        appId,
        metric,
        granularity,
        timeZone: 'UTC',
        conversionEvents: [],
        startDate: '2026-02-12',
        endDate: '2026-03-20',
        source,
      });
    }
  }
  return out;
}

describe('migration 026 (per-app daily rows)', () => {
  it('fills them from user_days, and the triggers keep them equal to user_days', async () => {
    const db = database.knex;
    const ctx = {
      db,
      clock: () => new Date('2026-03-21T12:00:00Z'),
      config: loadConfig({ LOG_LEVEL: 'silent' }),
    } as unknown as ServiceContext;
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm026' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm026' });
    const users = Array.from({ length: 12 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `u${i}` }));
    await db('users').insert(users);
    await writeEvents(
      db,
      app.id,
      users.map((u) => u.id),
      0,
    );
    await foldRollups(db);

    // Before 026: user_days filled, the per-app rows not there yet.
    await m026.down(db);
    await m026.up(db);
    expect(
      await db('app_days')
        .count<{ n: string }[]>({ n: '*' })
        .then((r) => Number(r[0]!.n)),
    ).toBeGreaterThan(30);
    expect(await differences(db)).toEqual({ days: 0, gaps: 0, periods: 0 });

    // More events (new days for some users, more on days they had), folded: still equal.
    await writeEvents(db, app.id, users.map((u) => u.id).slice(4), 1);
    await foldRollups(db);
    expect(await differences(db)).toEqual({ days: 0, gaps: 0, periods: 0 });

    // Events deleted (days emptied in the middle of users' histories), folded: still equal.
    await db('events')
      .where({ app_id: app.id })
      .whereRaw("created_at >= '2026-02-25' and created_at < '2026-03-02'")
      .delete();
    await db('events').where({ app_id: app.id, user_id: users[3]!.id }).delete();
    const raw = await metrics(ctx, app.id, 'raw');
    // Unfolded deltas are read with the per-app rows: the same figures before the fold and after.
    expect(await metrics(ctx, app.id)).toEqual(raw);
    await foldRollups(db);
    expect(await differences(db)).toEqual({ days: 0, gaps: 0, periods: 0 });
    expect(await metrics(ctx, app.id)).toEqual(raw);
  }, 180_000);

  it('clears the dead rows folding leaves once they outnumber the live ones (autovacuum may be off)', async () => {
    const db = database.knex;
    const stats = async () =>
      (
        await db.raw(
          "select n_dead_tup::int as dead, vacuum_count::int as vacuums from pg_stat_user_tables where relname = 'activity_deltas'",
        )
      ).rows[0] as { dead: number; vacuums: number };
    const org = await insertOrganization(db, { id: uuidv7(), name: 'm026 vacuum' });
    const app = await insertApp(db, { id: uuidv7(), organization_id: org.id, name: 'm026 vacuum' });
    const users = Array.from({ length: 8 }, (_, i) => ({ id: uuidv7(), app_id: app.id, external_id: `v${i}` }));
    await db('users').insert(users);
    await writeEvents(
      db,
      app.id,
      users.map((u) => u.id),
      2,
    );
    const before = await stats();
    expect(await foldRollups(db, { vacuumMinDead: 1 })).toBeGreaterThan(100);
    // The statistics of the fold's deletions reach pg_stat_user_tables within seconds; the next
    // fold finds more dead deltas than live ones and vacuums.
    const deadline = Date.now() + 20_000;
    // (pg_stat_force_next_flush: the embedded database's one session reports its own at once.)
    while ((await stats()).dead === 0 && Date.now() < deadline) {
      await db.raw('select pg_stat_force_next_flush()');
      await new Promise((r) => setTimeout(r, 250));
    }
    expect((await stats()).dead).toBeGreaterThan(0);
    // (Salt 4: this one user gets events; with salt 3 every day of theirs was skipped, nothing was
    // folded, and the test passed only when the first fold had vacuumed already.)
    await writeEvents(db, app.id, [users[0]!.id], 4);
    expect(await foldRollups(db, { vacuumMinDead: 1 })).toBeGreaterThan(0);
    const after = await stats();
    expect(after.vacuums).toBeGreaterThan(before.vacuums);
  }, 60_000);
});
