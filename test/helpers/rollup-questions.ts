// Questions the activity rollup answers (language/queries/compile-rollup.ts), checked against raw
// events: each is compiled twice, to read the rollup and to read raw events, both run through the
// sandbox as the API runs them, and the rows must be equal. The compiled statement must really
// read the rollup, so a question that fell back to raw events fails here instead of passing
// vacuously; and the question as the API answers it (answerQuery: series of active users come
// from the dau metric) must give the same rows. Daily users, events and revenue are also checked
// against reference SQL in the test. Questions on named events, event names, hours and weekdays
// read the per-event rollup (event_slots, migration 028) the same way; events per name and per
// local hour of the day are checked against SQL here too. Questions per user over all time read
// user_totals (migration 031).
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

/** Questions the per-event rollup answers (event_slots): named events, names, hours and weekdays. */
const SLOTS = [
  'top 2 events',
  'events by event name',
  'events by hour of the day',
  'events by day of the week',
  'weekend vs weekdays events',
  'purchase events per week',
  'number of view events last week',
  'session events per day in the last 14 days',
  'events per hour yesterday',
  'number of purchase events by hour in the last 3 days',
  'purchases per day',
  'count of session events per month',
  'most common events last week',
];
const SLOTS_MONEY = ['revenue by event', 'average revenue of purchases by week', 'revenue by event name this month'];
/** Questions per user over all time: one row a user from user_totals (migration 031). */
const ALL_TIME_PER_USER = ['users with more than 3 events', 'events by user', 'top 3 users by revenue'];

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
      // Money questions need revenue the engine has seen; named events, that the app has them.
      const named = /\b(purchases?|session|view)\b/.test(question);
      if (err instanceof NotUnderstood && ([...MONEY, ...SLOTS_MONEY].includes(question) || named)) return null;
      throw err;
    }
    const perEvent = SLOTS.includes(question) || SLOTS_MONEY.includes(question);
    const fromRollup = compileQuery(ast, { ...lc.compile, rollup: true, eventRollup: true });
    const fromRaw = compileQuery(ast, { ...lc.compile, rollup: false, eventRollup: false });
    expect(fromRollup.statement, `"${question}" reads the rollup`).toMatch(
      perEvent ? /public\.event_slots\b/ : /public\.(user_days|app_days|app_day_events|user_totals)\b/,
    );
    if (ALL_TIME_PER_USER.includes(question)) {
      expect(fromRollup.statement, `"${question}" reads one row a user`).toMatch(/public\.user_totals\b/);
      expect(fromRollup.statement).not.toMatch(/user_days/);
    }
    expect(fromRaw.statement).not.toMatch(/user_days|event_slots|user_totals/);
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
  for (const q of [...ALWAYS, ...MONEY, ...SLOTS, ...SLOTS_MONEY]) await run(q);

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

  // Events per name and per local hour of the day, against SQL written here.
  const perName = await ctx.db.raw(
    `select event_name, count(*)::int as value from events where app_id = ?::uuid and not is_bot
     group by 1 order by 2 desc, 1`,
    [appId],
  );
  expect(await run('events by event name')).toEqual(perName.rows);
  const perHour = await ctx.db.raw(
    `select extract(hour from created_at at time zone ?)::int as hour, count(*)::int as value from events
     where app_id = ?::uuid and not is_bot group by 1 order by 1`,
    [lc.timeZone, appId],
  );
  expect(await run('events by hour of the day')).toEqual(perHour.rows);
}
