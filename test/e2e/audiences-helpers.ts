// The hand-built users and events the audience tests (audiences.test.ts, audiences-llm.test.ts)
// load into a tenant: each criteria form selects a known set of them.
import type { FixtureUser } from '../fixtures/audience-data.js';

export const USERS: FixtureUser[] = [
  {
    user_id: 'ann',
    email: 'ann@shop.io',
    properties: { plan: 'premium', score: 10, tags: ['a', 'b'], city: 'New York' },
    events: [
      { event_name: 'signup', days_ago: 40 },
      { event_name: 'purchase', days_ago: 1 },
      { event_name: 'purchase', days_ago: 10 },
      { event_name: 'purchase', days_ago: 29 },
      { event_name: 'purchase', days_ago: 31 },
    ],
  },
  {
    user_id: 'ben',
    phone: '+15550000001',
    properties: { plan: 'free', score: 5.5 },
    events: [
      { event_name: 'signup', days_ago: 3 },
      { event_name: 'purchase', days_ago: 2 },
    ],
  },
  { user_id: 'cat', email: 'cat@shop.io', properties: { plan: 'Pro' }, events: [] },
  { user_id: 'dan', properties: { plan: 'premium', score: '12' }, events: [{ event_name: 'signup', days_ago: 20 }] },
  {
    user_id: 'eve',
    events: [
      { event_name: 'signup', days_ago: 15 },
      ...[1, 1, 2, 3].map((d) => ({ event_name: 'purchase', days_ago: d, bot: true })),
    ],
  },
  {
    user_id: 'fay',
    events: [
      { event_name: 'signup', at: '2026-03-10T10:00:00Z' },
      { event_name: 'Add To Cart', days_ago: 5 },
    ],
  },
];
