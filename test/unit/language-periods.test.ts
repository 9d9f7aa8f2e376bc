// Time expressions mean the same in analytics questions and audience criteria (DESIGN §7): each
// phrase is read into the same period by both parsers, and resolves to the documented dates for a
// fixed clock (Tuesday 2026-03-31, 18:00 UTC).
import { describe, expect, it } from 'vitest';
import type { Condition, Period } from '../../server/src/language/ast.js';
import { Lexicon, understandCriteria, understandQuestion } from '../../server/src/language/index.js';
import { periodDates } from '../../server/src/language/periods.js';

const lexicon = new Lexicon({
  events: [{ name: 'purchase', displayName: null, volume: 10, firstSeen: null, properties: [] }],
  userProperties: [],
  users: 1,
});
const clock = { today: '2026-03-31', now: new Date('2026-03-31T18:00:00Z') };

const findPeriod = (c: Condition): Period | undefined =>
  c.type === 'did' || c.type === 'first_seen' || c.type === 'inactive'
    ? c.period
    : c.type === 'and' || c.type === 'or'
      ? c.of.map(findPeriod).find(Boolean)
      : c.type === 'not'
        ? findPeriod(c.of)
        : undefined;

const EXPECTED: [string, string | null, string | null][] = [
  ['today', '2026-03-31', '2026-03-31'],
  ['yesterday', '2026-03-30', '2026-03-30'],
  ['the day before yesterday', '2026-03-29', '2026-03-29'],
  ['this week', '2026-03-30', '2026-03-31'],
  ['this month', '2026-03-01', '2026-03-31'],
  ['so far this month', '2026-03-01', '2026-03-31'],
  ['YTD', '2026-01-01', '2026-03-31'],
  ['this quarter', '2026-01-01', '2026-03-31'],
  ['last week', '2026-03-23', '2026-03-29'],
  ['last month', '2026-02-01', '2026-02-28'],
  ['last quarter', '2025-10-01', '2025-12-31'],
  ['last year', '2025-01-01', '2025-12-31'],
  ['in the last 7 days', '2026-03-25', '2026-03-31'],
  ['past 7 days', '2026-03-25', '2026-03-31'],
  ['past week', '2026-03-25', '2026-03-31'],
  ['in the last 2 weeks', '2026-03-18', '2026-03-31'],
  ['in the last 30 days', '2026-03-02', '2026-03-31'],
  ['in the last 3 months', '2026-01-01', '2026-03-31'],
  // "past week/month": 7 or 30 calendar days ending today (DESIGN §7), like "the last 30 days"
  ['in the past month', '2026-03-02', '2026-03-31'],
  ['in the last month', '2026-03-02', '2026-03-31'],
  ['3 days ago', '2026-03-28', '2026-03-28'],
  ['2 weeks ago', '2026-03-16', '2026-03-22'],
  ['since March 15', '2026-03-15', null],
  ['since 2026-03-15', '2026-03-15', null],
  ['after 2026-03-15', '2026-03-16', null],
  ['before 2026-03-15', null, '2026-03-14'],
  ['until March 15', null, '2026-03-15'],
  ['on March 10th', '2026-03-10', '2026-03-10'],
  ['on 3/10', '2026-03-10', '2026-03-10'],
  ['in March', '2026-03-01', '2026-03-31'],
  ['in October', '2025-10-01', '2025-10-31'],
  ['in 2025', '2025-01-01', '2025-12-31'],
  ['between March 1 and March 7', '2026-03-01', '2026-03-07'],
  ['from 2026-03-01 to 2026-03-07', '2026-03-01', '2026-03-07'],
  ['over the weekend', '2026-03-28', '2026-03-29'],
  ['on Monday', '2026-03-30', '2026-03-30'],
  // "may" is a month after these words too, not only after "in" (the clock is in March: last May)
  ['since May', '2025-05-01', null],
  ['since the start of May', '2025-05-01', null],
  ['before May', null, '2025-04-30'],
  ['in May', '2025-05-01', '2025-05-31'],
];

describe('time expressions', () => {
  it.each(EXPECTED)('"%s" covers %s to %s in questions and in criteria alike', (phrase, first, last) => {
    const question = understandQuestion(`purchases ${phrase}`, lexicon, clock).ast.period!;
    const criteria = findPeriod(understandCriteria(`users who did purchase ${phrase}`, lexicon, clock).ast)!;
    expect(criteria).toEqual(question);
    expect(periodDates(question, clock.today, clock.now)).toEqual({ first, last });
  });

  it('reads the last N hours as hours before now', () => {
    const p = understandQuestion('purchases in the last 24 hours', lexicon, clock).ast.period!;
    expect(p.from).toEqual({ hours: 24 });
    expect(p.to).toBeUndefined();
  });

  it.each(['tomorrow', 'next week', 'recently', 'in the last few days', 'on 2026-02-30'])('refuses "%s"', (phrase) => {
    expect(() => understandQuestion(`purchases ${phrase}`, lexicon, clock)).toThrow();
    expect(() => understandCriteria(`users who did purchase ${phrase}`, lexicon, clock)).toThrow();
  });
});
