// Hours of the day and days of the week (issue 34, family 5), in the organization's time zone: an
// organization in America/New_York, whose local hours and days differ from UTC's, so that a
// compiler that forgot the time zone, read "on Fridays" as last Friday, or dropped the filter
// would give other rows than the reference SQL here. Questions the engine cannot apply an hour or
// weekday to are refused, never answered without it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoApp, normalise, startDemoApp } from '../helpers/demo-app.js';

const TZ = 'America/New_York';
const doc = {
  seed: { seed: 5, users: 40, days: 30, end_date: '2026-06-17' },
  clock: '2026-06-18T03:30:00Z',
  time_zone: TZ,
};
let demo: DemoApp;
beforeAll(async () => {
  demo = await startDemoApp(doc);
}, 120_000);
afterAll(() => demo?.close());

const BASE = 'from events e join users u on u.id = e.user_id where e.app_id = :app and not e.is_bot';
const at = (d: string) => `timestamptz '${d} 00:00:00 ${TZ}'`;
const MAY = ` and e.created_at >= ${at('2026-05-01')} and e.created_at < ${at('2026-06-01')}`;
const LAST_WEEK = ` and e.created_at >= ${at('2026-06-08')} and e.created_at < ${at('2026-06-15')}`;
const hour = (zone: string) => `extract(hour from e.created_at at time zone '${zone}')::int`;
const dow = (zone: string) => `extract(isodow from e.created_at at time zone '${zone}')::int`;
const REVENUE = `(e.properties->>'revenue')::numeric`;

async function ask(question: string) {
  const { data, error } = await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: question } });
  expect(error, `${question}: ${JSON.stringify(error)}`).toBeUndefined();
  return { rows: normalise(data!.data), interpretation: data!.interpretation! };
}
const values = (rows: Record<string, unknown>[]) => rows.map((r) => Object.values(r));

const CASES: [string, string][] = [
  ['purchases on fridays', `select count(*) ${BASE} and e.event_name = 'purchase' and ${dow(TZ)} = 5`],
  [
    'how many item views on Saturdays and Sundays in May?',
    `select count(*) ${BASE} and e.event_name = 'item_view'${MAY} and ${dow(TZ)} in (6, 7)`,
  ],
  [
    'revenue on weekdays last month',
    `select sum(${REVENUE}) ${BASE} and e.event_name = 'purchase'${MAY} and ${dow(TZ)} <= 5`,
  ],
  [
    'sessions before 10am last week',
    `select count(*) ${BASE} and e.event_name = 'session_start'${LAST_WEEK} and ${hour(TZ)} < 10`,
  ],
  [
    'add to carts between 8pm and midnight',
    `select count(*) ${BASE} and e.event_name = 'add_to_cart' and ${hour(TZ)} >= 20`,
  ],
  [
    'purchases after 6pm on weekends',
    `select count(*) ${BASE} and e.event_name = 'purchase' and ${hour(TZ)} >= 18 and ${dow(TZ)} >= 6`,
  ],
  [
    'average order value on weekends',
    `select round(avg(${REVENUE}), 2) ${BASE} and e.event_name = 'purchase' and ${dow(TZ)} >= 6`,
  ],
  [
    'item views by hour of the day last week',
    `select ${hour(TZ)}, count(*) ${BASE} and e.event_name = 'item_view'${LAST_WEEK} group by 1 order by 1`,
  ],
  [
    'signups by day of the week',
    `select to_char(e.created_at at time zone '${TZ}', 'FMDay'), count(*) ${BASE} and e.event_name = 'signup' group by 1, ${dow(TZ)} order by ${dow(TZ)}`,
  ],
  [
    'which hour of the day has the most purchases',
    `select ${hour(TZ)}, count(*) ${BASE} and e.event_name = 'purchase' group by 1 order by 2 desc, 1 limit 1`,
  ],
  [
    'busiest day of the week for sessions in May',
    `select to_char(e.created_at at time zone '${TZ}', 'FMDay'), count(*) ${BASE} and e.event_name = 'session_start'${MAY} group by 1, ${dow(TZ)} order by 2 desc, ${dow(TZ)} limit 1`,
  ],
  [
    'quietest hour for purchases',
    `select h, count(e.id) from generate_series(0, 23) h left join events e on e.app_id = :app and not e.is_bot and e.event_name = 'purchase' and ${hour(TZ)} = h group by 1 order by 2, 1 limit 1`,
  ],
  [
    'purchases on weekends vs weekdays',
    `select 'weekend', count(*) filter (where ${dow(TZ)} >= 6) ${BASE} and e.event_name = 'purchase' union all select 'weekdays', count(*) filter (where ${dow(TZ)} <= 5) ${BASE} and e.event_name = 'purchase'`,
  ],
  [
    'weekday vs weekend revenue in may',
    `select 'weekdays', sum(${REVENUE}) filter (where ${dow(TZ)} <= 5) ${BASE} and e.event_name = 'purchase'${MAY} union all select 'weekend', sum(${REVENUE}) filter (where ${dow(TZ)} >= 6) ${BASE} and e.event_name = 'purchase'${MAY}`,
  ],
];

describe('hours and weekdays match reference SQL in the local time zone', () => {
  it.each(CASES)('%s', async (question, sql) => {
    const { rows, interpretation } = await ask(question);
    expect(values(rows), interpretation).toEqual(values(await demo.reference(sql)));
  });

  it('reads hours in the organization time zone, not UTC (the data tells them apart)', async () => {
    const { rows } = await ask('purchases by hour of day');
    const local = await demo.reference(
      `select ${hour(TZ)}, count(*) ${BASE} and e.event_name = 'purchase' group by 1 order by 1`,
    );
    const utc = await demo.reference(
      `select ${hour('UTC')}, count(*) ${BASE} and e.event_name = 'purchase' group by 1 order by 1`,
    );
    expect(values(rows)).toEqual(values(local));
    expect(values(local)).not.toEqual(values(utc));
  });

  it('"on Fridays" is every Friday, "on Friday" the last one; a filter changes the answer', async () => {
    const every = (await ask('purchases on Fridays')).rows;
    const last = (await ask('purchases on Friday')).rows;
    const all = (await ask('purchases')).rows;
    expect(every).not.toEqual(last);
    expect(every).not.toEqual(all);
  });

  it('says which hours and days it counted, in the organization time zone', async () => {
    expect((await ask('revenue on weekends between 9am and 5pm last month')).interpretation).toMatch(
      /local time is between 09:00 and 17:00 and the local day is Saturday or Sunday.*2026-05-01 to 2026-05-31/,
    );
    expect((await ask('sessions by hour of the day')).interpretation).toMatch(
      /hour of the day \(the organization's time zone\), in order/,
    );
  });

  it.each([
    'how many users purchased on weekends',
    'purchases per user on mondays',
    'daily purchases on weekends',
    'purchases this week vs last week on weekdays',
    'between 5pm and 9am purchases',
    'DAU on weekends',
  ])('refuses what it cannot apply an hour or weekday to: %s', async (question) => {
    const { error, response } = await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: question } });
    expect(response.status, question).toBe(400);
    expect(error?.code).toBe('QUERY_NOT_UNDERSTOOD');
  });

  it('refuses hours and weekdays in audience criteria rather than dropping them', async () => {
    const criteria = 'users who purchased on weekends';
    const { error, response } = await demo.client.audiencesCreate({
      body: { app_id: demo.appId, name: criteria, criteria },
    });
    expect(response.status).toBe(400);
    expect(error?.message).toMatch(/on weekends/);
  });
});
