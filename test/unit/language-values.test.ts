// Values of the app that look like English words are read as values only where they can be, and
// never dropped: a country code written like a preposition ("IN", "US") stays a filter, and words
// that only name things ("items") do not hide the rest of a condition.
import { describe, expect, it } from 'vitest';
import { Lexicon, understandCriteria, understandQuestion } from '../../server/src/language/index.js';

const stats = (key: string, values: string[]) => ({
  key,
  numeric: false,
  text: true,
  boolean: false,
  array: false,
  count: 10,
  values: values.map((value) => ({ value, count: 1 })),
  complete: true,
});
const lexicon = new Lexicon({
  events: [
    {
      name: 'purchase',
      displayName: null,
      volume: 10,
      firstSeen: null,
      properties: [stats('country', ['IN', 'US', 'FR']), stats('item_id', ['a-1', 'b-2'])],
    },
    {
      name: 'item_view',
      displayName: null,
      volume: 20,
      firstSeen: null,
      properties: [stats('category', ['sports', 'books'])],
    },
  ],
  userProperties: [stats('country', ['IN', 'US', 'FR'])],
  users: 3,
});
const clock = { today: '2026-03-31', now: new Date('2026-03-31T18:00:00Z') };

describe('values that look like words', () => {
  it.each([
    ['purchases in IN last week', ['IN']],
    ['purchases from the US in March', ['US']],
    ['purchases IN yesterday', ['IN']],
  ])('"%s" keeps the country filter', (q, values) => {
    const { ast } = understandQuestion(q, lexicon, clock);
    expect(ast.events.filters).toEqual([{ key: 'country', op: 'in', values }]);
    expect(ast.period).toBeDefined();
  });

  it('reads "in" in lower case as a preposition, not India', () => {
    const { ast } = understandQuestion('purchases in march', lexicon, clock);
    expect(ast.events.filters).toEqual([]);
  });

  it('does not let "items" hide a condition', () => {
    const { ast } = understandCriteria('users who looked at sports items last week', lexicon, clock);
    expect(ast).toMatchObject({
      type: 'did',
      events: ['item_view'],
      filters: [{ key: 'category', values: ['sports'] }],
    });
  });
});
