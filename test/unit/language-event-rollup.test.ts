// Which questions the per-event rollup answers (language/queries/compile-rollup.ts, slotSource):
// it holds events per 15-minute UTC slot and name, so a question reads it only when every bound
// of its period falls on a quarter hour (every local one does after 1972) and it has no condition
// on properties or users; otherwise the compiled statement reads raw events.
import { describe, expect, it } from 'vitest';
import { compileQuery, Lexicon, understandQuestion } from '../../server/src/language/index.js';

const lexicon = new Lexicon({
  events: [
    {
      name: 'purchase',
      displayName: null,
      volume: 10,
      firstSeen: null,
      properties: [
        {
          key: 'amount',
          numeric: true,
          text: false,
          boolean: false,
          array: false,
          count: 10,
          values: [],
          complete: false,
        },
      ],
    },
    { name: 'session', displayName: null, volume: 90, firstSeen: null, properties: [] },
  ],
  userProperties: [],
  users: 1,
});

const compiled = (question: string, now: string, timeZone = 'UTC') => {
  const clock = { today: now.slice(0, 10), now: new Date(now) };
  const { ast } = understandQuestion(question, lexicon, clock);
  const cx = {
    now: clock.now,
    timeZone,
    today: clock.today,
    moneyKey: null,
    conversionEvents: [],
    firstSeen: () => null,
    rollup: true,
    eventRollup: true,
  };
  return compileQuery(ast, cx).statement;
};

describe('questions the per-event rollup answers', () => {
  it.each([
    ['top 5 events', '2026-03-31T18:07:12Z'],
    ['purchase events per week', '2026-03-31T18:07:12Z'],
    ['session events by hour of the day last week', '2026-03-31T18:07:12Z'],
    ['number of purchase events in the last 24 hours', '2026-03-31T18:15:00Z'],
    ['purchases per day in the last 30 days', '2026-03-31T18:07:12Z'],
  ])('"%s" at %s reads event_slots', (question, now) => {
    expect(compiled(question, now)).toContain('public.event_slots');
    expect(compiled(question, now, 'Asia/Kathmandu')).toContain('public.event_slots');
  });

  it.each([
    // 24 hours before 18:07:12 is not on a quarter hour: a slot would be counted in part
    ['number of purchase events in the last 24 hours', '2026-03-31T18:07:12Z'],
    // a condition on the events' properties, users, or a count of users
    ['purchases with amount over 5 per day', '2026-03-31T18:00:00Z'],
    ['unique users who did purchase per week', '2026-03-31T18:00:00Z'],
    // before 1973 a zone may have had an offset in seconds
    ['purchase events since 1970-01-01', '2026-03-31T18:00:00Z'],
  ])('"%s" at %s reads raw events', (question, now) => {
    const statement = compiled(question, now);
    expect(statement).not.toContain('event_slots');
    // Users only counted read the events table by their own key (compile.ts, EVENTS_BY_USER_KEY).
    expect(statement).toMatch(/from events e\b|from public\.events x\b/);
  });
});
