// No answer changes meaning silently (issue 34): for each word that changes what a question or
// criteria mean ("never", "then", "per user", "both", a second period), the text with the word
// gives a different answer from the text without it, or is refused; a refusal names the word and
// offers rephrasings that the engine answers. Also: every interpretation says what was measured,
// over whom, over which days (with the rule for rolling windows) and in what shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DemoApp, normalise, startDemoApp } from '../helpers/demo-app.js';

const doc = {
  seed: { seed: 1, users: 60, days: 60, end_date: '2026-03-31' },
  clock: '2026-03-31T23:00:00Z',
};

let demo: DemoApp;
beforeAll(async () => {
  demo = await startDemoApp(doc);
}, 120_000);
afterAll(() => demo?.close());

type Answer = { refused: true; message: string; rephrasings: string[] } | { refused: false; rows: unknown };

async function answer(text: string): Promise<Answer> {
  const criteria = text.startsWith('users who');
  const { data, error, response } = criteria
    ? await demo.client.audiencesCreate({ body: { app_id: demo.appId, name: text.slice(0, 100), criteria: text } })
    : await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: text } });
  expect(response.status, text).toBeLessThan(500);
  if (error) {
    expect(error.code, text).toBe('QUERY_NOT_UNDERSTOOD');
    const details = error.details as { suggestions: { rephrasings: string[] } };
    return { refused: true, message: error.message, rephrasings: details.suggestions.rephrasings };
  }
  const rows = 'user_count' in data! ? data.user_count : normalise((data as { data: Record<string, unknown>[] }).data);
  return { refused: false, rows };
}

// [word, text with it, the same text without it]
const PAIRS: [string, string, string][] = [
  ['never', 'how many users never purchased', 'how many users purchased'],
  ['never', 'users who added to cart but never purchased', 'users who added to cart but purchased'],
  ['never', 'users who never added to cart', 'users who added to cart'],
  ['then', 'how many users added to cart then purchased', 'how many users added to cart purchased'],
  ['then', 'users who viewed electronics then bought electronics', 'users who viewed electronics bought electronics'],
  // every purchase of the demo follows a view, so "viewed then bought" equals "viewed and bought"
  // here: the order is tested where the data tells it apart (nl-sequences.test.ts has both)
  ['went on to', 'how many users purchased and went on to sign up', 'how many users purchased and signed up'],
  ['per user', 'average revenue per user last month', 'average revenue last month'],
  ['per user', 'purchases per user this month', 'purchases this month'],
  ['one user', 'the most purchases by one user', 'the most purchases'],
  ['each user', 'how many sessions did each user have last week', 'how many sessions last week'],
  ['both', 'users who used both ios and android', 'users who used ios and android'],
  ['both', 'how many users were active both last week and this week', 'how many users were active last week'],
  ['second period', 'how many users purchased in February and in March', 'how many users purchased in February'],
  ['second period', 'users who purchased in february and in march', 'users who purchased in february'],
  ['second period', 'purchases this week vs last week', 'purchases this week'],
  ['weekdays', 'purchases on Fridays in March', 'purchases in March'],
  ['weekdays', 'purchases on Fridays', 'purchases on Friday'],
  ['hours', 'sessions before 10am last week', 'sessions last week'],
  ['how many', 'on average how many orders does a buyer place', 'on average orders does a buyer place'],
  ['again', 'how many users purchased in February and again in March', 'how many users purchased in February'],
  ['first time', 'how many users purchased for the first time in March', 'how many users purchased in March'],
  ['first time', 'users who purchased for the first time in march', 'users who purchased in march'],
  ['came back', 'how many users who signed up in February came back in March', 'how many users signed up in February'],
  ['vs', 'premium vs free purchases in March', 'premium purchases in March'],
];

describe('meaning-changing words are placed or refused', () => {
  it.each(PAIRS)('"%s": "%s"', async (word, withWord, withoutWord) => {
    const a = await answer(withWord);
    const b = await answer(withoutWord);
    if (a.refused) {
      // the refusal names the word, and its rephrasings are answered
      expect(a.message.toLowerCase()).toContain(word === 'second period' ? 'period' : word.split(' ')[0]);
      expect(a.rephrasings.length, a.message).toBeGreaterThanOrEqual(2);
      for (const r of a.rephrasings) expect((await answer(r)).refused, r).toBe(false);
    } else {
      expect(b.refused ? null : b.rows, `${withWord} / ${withoutWord}`).not.toEqual(a.rows);
    }
  });
});

describe('interpretations', () => {
  it.each([
    [
      'how many purchases in the last 7 days',
      /"purchase" events.*today and the 6 days before.*2026-03-25 to 2026-03-31.*One figure, counting all/,
    ],
    [
      'revenue by country last month',
      /revenue.*by .*country.*last month \(2026-02-01 to 2026-02-28\).*One row per group/,
    ],
    ['daily signups this week', /"signup" events.*per day.*this week.*One row per day/],
    [
      'purchases from premium users yesterday',
      /"purchase" events.*premium.*yesterday.*counting only the users described/,
    ],
    ['how many users purchased in the past month', /users who did "purchase".*2026-03-02 to 2026-03-31/],
  ])('name measure, population, period rule and shape: "%s"', async (question, pattern) => {
    const { data, error } = await demo.client.analyticsQuery({ body: { app_id: demo.appId, query: question } });
    expect(error, JSON.stringify(error)).toBeUndefined();
    expect(data!.interpretation).toMatch(pattern);
  });
});
