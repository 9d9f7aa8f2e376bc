// Migration 011: audience definitions of the first criteria engine (version 1) become conditions
// of the current AST that compile, keeping their meaning.
import { describe, expect, it } from 'vitest';
import { compileSegmentCount } from '../../server/src/language/queries/compile.js';
import { convert } from '../../server/src/storage/migrations/011-segments-v2.js';

const cx = {
  now: new Date('2026-03-31T18:00:00Z'),
  timeZone: 'UTC',
  today: '2026-03-31',
  moneyKey: 'revenue',
  conversionEvents: [],
  firstSeen: () => null,
};

describe('version 1 definitions', () => {
  it.each([
    [
      { type: 'event', event: 'purchase', min: 3, max: null, range: { from: { ago: 30, unit: 'day' } } },
      {
        type: 'did',
        events: ['purchase'],
        filters: [],
        times: { gte: 3 },
        period: { from: { unit: 'day', offset: -29 }, label: expect.any(String) },
      },
    ],
    [
      { type: 'event', event: 'purchase', min: 1, max: 0 },
      { type: 'not', of: { type: 'did', events: ['purchase'], filters: [] } },
    ],
    [
      { type: 'event', event: 'purchase', min: 0, max: 2 },
      { type: 'not', of: { type: 'did', events: ['purchase'], filters: [], times: { gt: 2 } } },
    ],
    [
      { type: 'active', range: { from: { start: 'week', back: 1 }, to: { start: 'week', back: 0 } } },
      {
        type: 'did',
        events: [],
        filters: [],
        period: {
          from: { unit: 'week', offset: -1 },
          to: { unit: 'week', offset: 0 },
          unit: 'week',
          label: expect.any(String),
        },
      },
    ],
    [
      { type: 'inactive', since: { ago: 14, unit: 'day' } },
      { type: 'inactive', period: { from: { unit: 'day', offset: -13 }, label: expect.any(String) } },
    ],
    [
      { type: 'signed_up', range: { from: { date: '2026-01-01' }, to: { date: '2026-01-31', shift: 1 } } },
      {
        type: 'first_seen',
        period: { from: { date: '2026-01-01' }, to: { date: '2026-02-01' }, label: expect.any(String) },
      },
    ],
    [
      { type: 'has', field: 'email' },
      { type: 'user', filter: { key: 'email', op: 'exists', values: [] } },
    ],
    [
      { type: 'property', key: 'plan', op: 'in', value: ['pro', 'premium'] },
      { type: 'user', filter: { key: 'plan', op: 'in', values: ['pro', 'premium'] } },
    ],
    [
      { type: 'and', of: [{ type: 'all' }, { type: 'not', of: { type: 'has', field: 'phone' } }] },
      {
        type: 'and',
        of: [
          { type: 'all' },
          { type: 'not', of: { type: 'user', filter: { key: 'phone', op: 'exists', values: [] } } },
        ],
      },
    ],
  ])('%j', (v1, v2) => {
    const converted = convert(v1);
    expect(converted).toEqual(v2);
    expect(compileSegmentCount(converted as never, cx).statement).toMatch(/^select count\(\*\)/);
  });
});
