// Questions the activity rollup answers (language/queries/compile-rollup.ts), checked against raw
// events: each is compiled twice, to read the rollup and to read raw events, both run through the
// sandbox as the API runs them, and the rows must be equal. The compiled statement must really
// read the rollup, so a question that fell back to raw events fails here instead of passing
// vacuously; and the question as the API answers it (answerQuery: series of active users come
// from the dau metric) must give the same rows. Daily users, events and revenue are also checked
// against reference SQL in the test.
import { expect } from 'vitest';
import { answerQuery } from '../../server/src/analytics/query.js';
import type { ServiceContext } from '../../server/src/context.js';
import { compileQuery, NotUnderstood, understandQuestion } from '../../server/src/language/index.js';
import { languageContext } from '../../server/src/language/service.js';
import { runOverRelations } from '../../server/src/sandbox/sandbox.js';

/** Questions with no money word: the engine reads them whatever the app's events hold. */
const ALWAYS = [
  'unique users per day for the last 30 days',
  'active users per week',
  'unique users per week for the last 30 days',
  'unique users per month for the last 30 days',
  'unique users by month',
  'events per day in the last 14 days',
  'number of events last week compared to the week before',
  'unique users this month vs last month',
  'users with more than 3 events',
  'events by user',
];
/** Money questions: read only when the app's events carry revenue the engine has seen. */
const MONEY = [
  'total revenue last month',
  'revenue by week',
  'average revenue by day',
  'top 3 users by revenue',
  'revenue per day in the last 30 days',
];

export interface DailyReference {
  get(day: string): { users: string; events: string; revenue: string } | undefined;
}

export async function expectQuestionsFromRollupEqualRaw(
  ctx: ServiceContext,
  appId: string,
  reference: DailyReference,
): Promise<void> {
  const lc = await languageContext(ctx, appId);
  const run = async (question: string) => {
    let ast: ReturnType<typeof understandQuestion>['ast'];
    try {
      ast = understandQuestion(question, lc.lexicon, lc.clock).ast;
    } catch (err) {
      if (err instanceof NotUnderstood && MONEY.includes(question)) return null;
      throw err;
    }
    const fromRollup = compileQuery(ast, { ...lc.compile, rollup: true });
    const fromRaw = compileQuery(ast, { ...lc.compile, rollup: false });
    expect(fromRollup.statement, `"${question}" reads the rollup`).toMatch(
      /public\.(user_days|app_days|app_day_events)\b/,
    );
    expect(fromRaw.statement).not.toContain('user_days');
    const options = { timeoutMs: 30_000 };
    const [a, b] = await Promise.all([
      runOverRelations(ctx, appId, fromRollup.statement, fromRollup.params, options),
      runOverRelations(ctx, appId, fromRaw.statement, fromRaw.params, options),
    ]);
    expect(a.rows, `"${question}" in ${lc.timeZone}: rollup against raw events`).toEqual(b.rows);
    // As the API answers it (series of active users come from the dau metric's daily rows).
    const answer = await answerQuery(ctx, { id: appId }, question);
    expect(answer.rows, `"${question}" in ${lc.timeZone} through the API's path`).toEqual(b.rows);
    return a.rows;
  };
  for (const q of [...ALWAYS, ...MONEY]) await run(q);

  // The same figures against SQL written here, per local day.
  const daily = async (question: string, column: 'users' | 'events' | 'revenue') => {
    const rows = await run(question);
    if (rows === null) return; // no revenue in this app's events: the engine refuses money questions
    expect(rows.length).toBe(30);
    for (const row of rows as { date: string; value: unknown }[]) {
      const want = Number(reference.get(row.date)?.[column] ?? 0);
      expect(Number(row.value), `${column} on ${row.date}`).toBeCloseTo(want, 6);
    }
  };
  await daily('unique users per day for the last 30 days', 'users');
  await daily('events per day in the last 30 days', 'events');
  await daily('revenue per day in the last 30 days', 'revenue');
}
