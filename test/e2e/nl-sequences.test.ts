// Sequences and the guard around them (issue 34, family 8): "A then B" counts users who did B after
// A, which differs from A or B, and from A and B in any order; "within N days (of signing up)"
// bounds the gap; "what % of users who did A went on to do B" divides by those who did A. Each
// answer is compared with reference SQL written here; texts whose order or population cannot be
// placed are refused, never answered without it.
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

const at = (d: string) => `timestamptz '${d} 00:00:00 ${TZ}'`;
const live = (x: string) => `${x}.app_id = :app and not ${x}.is_bot`;
/** Users who did `a` (SQL on alias a) and later `b` (on alias b), with an optional extra bound on b. */
const seq = (a: string, b: string, extra = '') =>
  `select count(*) as value from users u where u.app_id = :app and exists (select 1 from events a where ${live('a')} and a.user_id = u.id and ${a}
     and exists (select 1 from events b where ${live('b')} and b.user_id = u.id and ${b} and b.created_at > a.created_at${extra}))`;
const either = (a: string, b: string) =>
  `select count(distinct e.user_id) as value from events e where ${live('e')} and (${a.replaceAll('a.', 'e.')} or ${b.replaceAll('b.', 'e.')})`;
const both = (a: string, b: string) =>
  `select count(*) as value from users u where u.app_id = :app and exists (select 1 from events a where ${live('a')} and a.user_id = u.id and ${a}) and exists (select 1 from events b where ${live('b')} and b.user_id = u.id and ${b})`;
const MAY = (x: string) => ` and ${x}.created_at >= ${at('2026-05-01')} and ${x}.created_at < ${at('2026-06-01')}`;

async function ask(question: string) {
  const { data, error } = await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: question } });
  expect(error, `${question}: ${JSON.stringify(error)}`).toBeUndefined();
  return { rows: normalise(data!.data), interpretation: data!.interpretation! };
}

const CASES: [string, string][] = [
  ['how many users viewed an item then purchased', seq("a.event_name = 'item_view'", "b.event_name = 'purchase'")],
  ['how many users purchased and then viewed an item', seq("a.event_name = 'purchase'", "b.event_name = 'item_view'")],
  [
    'how many users added to cart then purchased last month',
    seq(`a.event_name = 'add_to_cart'${MAY('a')}`, `b.event_name = 'purchase'${MAY('b')}`),
  ],
  [
    'how many users made a purchase within 1 day of signing up',
    seq("a.event_name = 'signup'", "b.event_name = 'purchase'", " and b.created_at <= a.created_at + interval '1 day'"),
  ],
  [
    'how many people signed up and then bought something within 2 hours',
    seq(
      "a.event_name = 'signup'",
      "b.event_name = 'purchase'",
      " and b.created_at <= a.created_at + interval '2 hours'",
    ),
  ],
  [
    'how many users viewed electronics and went on to buy electronics',
    seq(
      "a.event_name = 'item_view' and a.properties->>'category' = 'electronics'",
      "b.event_name = 'purchase' and b.properties->>'category' = 'electronics'",
    ),
  ],
];

describe('sequences match reference SQL', () => {
  it.each(CASES)('%s', async (question, sql) => {
    const { rows, interpretation } = await ask(question);
    expect(rows, interpretation).toEqual(await demo.reference(sql));
    expect(interpretation).toMatch(/and then, after it/);
  });

  it('"A then B" differs from "A or B" and from "A and B" on this data', async () => {
    const a = "a.event_name = 'purchase'";
    const b = "b.event_name = 'signup'";
    const then = (await ask('how many users purchased then signed up')).rows;
    expect(then).toEqual(await demo.reference(seq(a, b)));
    expect(then).not.toEqual(await demo.reference(either(a, b)));
    expect(then).not.toEqual(await demo.reference(both(a, b)));
    const within = (await ask('how many users made a purchase within 1 day of signing up')).rows;
    const later = (await ask('how many users signed up and then made a purchase')).rows;
    expect(within).not.toEqual(later);
  });

  it('"what % of users who did A went on to do B" divides by those who did A', async () => {
    const { rows } = await ask('what % of users who added to cart went on to purchase');
    const did = await demo.reference(both("a.event_name = 'add_to_cart'", "b.event_name = 'add_to_cart'"));
    const then = await demo.reference(seq("a.event_name = 'add_to_cart'", "b.event_name = 'purchase'"));
    const want = Math.round((10000 * Number(then[0]!.value)) / Number(did[0]!.value)) / 100;
    expect(rows).toEqual([{ value: want }]);
  });

  it('an audience "viewed electronics then bought electronics" holds the users of the reference', async () => {
    const criteria = 'users who viewed electronics then bought electronics';
    const { data, error } = await demo.client.audiencesCreate({
      body: { app_id: demo.appId, name: criteria, criteria },
    });
    expect(error).toBeUndefined();
    const want = await demo.reference(
      seq(
        "a.event_name = 'item_view' and a.properties->>'category' = 'electronics'",
        "b.event_name = 'purchase' and b.properties->>'category' = 'electronics'",
      ),
    );
    expect(data!.user_count).toBe(want[0]!.value);
  });

  it.each([
    'how many users purchased before ever adding anything to the cart',
    'what % of users who added to cart purchased',
    'how many users added to cart purchased',
    'what % of users who signed up in may made a purchase in june',
    'purchases then sessions by day',
  ])('refuses what it cannot place: %s', async (question) => {
    const { error, response } = await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: question } });
    expect(response.status, question).toBe(400);
    expect(error?.code).toBe('QUERY_NOT_UNDERSTOOD');
  });
});
