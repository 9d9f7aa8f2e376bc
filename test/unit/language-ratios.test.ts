// A ratio (a figure per user, a share) is computed from its two parts alone. Filters on the events
// that the reading left outside the parts would be dropped from the answer: such questions are
// refused with the two numbers Tally can give instead, never answered without the filter.
import { describe, expect, it } from 'vitest';
import { Lexicon, NotUnderstood, understandQuestion } from '../../server/src/language/index.js';

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
      properties: [
        stats('country', ['IN', 'US', 'FR']),
        stats('category', ['sports', 'books']),
        { ...stats('revenue', []), numeric: true, text: false },
      ],
    },
    { name: 'item_view', displayName: null, volume: 20, firstSeen: null, properties: [stats('category', ['books'])] },
  ],
  userProperties: [stats('country', ['IN', 'US', 'FR'])],
  users: 3,
});
const clock = { today: '2026-03-31', now: new Date('2026-03-31T18:00:00Z') };

describe('ratios and the filters they cannot carry', () => {
  it.each([
    'average purchases per user for books',
    'purchases per buyer of books',
    'revenue per paying user for books',
  ])('%s: refused, naming the filter and two questions Tally answers', (question) => {
    let refusal: unknown;
    try {
      understandQuestion(question, lexicon, clock);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(NotUnderstood);
    const e = refusal as NotUnderstood;
    expect(e.message).toContain('category is books');
    expect(e.rephrasings).toEqual([
      'how many purchase where category is books',
      'how many users did purchase where category is books',
    ]);
  });

  it('a filter on the users stays answerable: it applies to both parts', () => {
    const { ast } = understandQuestion('how many purchases per user in the US last month', lexicon, clock);
    expect(ast.measure).toMatchObject({ kind: 'ratio', numerator: { measure: 'events', events: ['purchase'] } });
    expect(ast.events.filters).toEqual([]);
    expect(ast.segment).toEqual({ type: 'user', filter: { key: 'country', op: 'in', values: ['US'] } });
  });
});

describe('rates Tally has no built-in figure for', () => {
  const shop = new Lexicon({
    events: ['add_to_cart', 'purchase', 'page_view'].map((name) => ({
      name,
      displayName: null,
      volume: 10,
      firstSeen: null,
      properties: [],
    })),
    userProperties: [],
    users: 3,
  });

  it.each(['what is the cart abandonment rate last month', 'how many abandoned carts this week'])(
    "%s: refused with the usual definition and its two parts in the app's events",
    (question) => {
      let refusal: unknown;
      try {
        understandQuestion(question, shop, clock);
      } catch (err) {
        refusal = err;
      }
      expect(refusal).toBeInstanceOf(NotUnderstood);
      const e = refusal as NotUnderstood;
      expect(e.message).toContain('added something to their cart in a period and did not buy');
      expect(e.rephrasings).toEqual([
        'how many users did add_to_cart last month',
        'how many users did add_to_cart last month but never purchase last month',
      ]);
      // ...and the rephrasings are answered, the second with both steps in the same month
      for (const r of e.rephrasings) expect(understandQuestion(r, shop, clock).ast.measure.kind).toBe('users');
      const both = understandQuestion(e.rephrasings[1]!, shop, clock).ast.segment as {
        of: { period?: unknown; of?: { period?: unknown } }[];
      };
      expect(both.of[0]!.period).toMatchObject({ label: 'last month' });
      expect(both.of[1]!.of!.period).toMatchObject({ label: 'last month' });
    },
  );

  it('a cart question without the rate is read as usual', () => {
    expect(understandQuestion('how many add to carts last week', shop, clock).ast.measure.kind).toBe('events');
  });
});
