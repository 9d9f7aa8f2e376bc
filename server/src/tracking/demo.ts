// Deterministic demo data (POST /admin/v1/apps/{app_id}/seed-demo): users who sign up over the
// period, open sessions, view items of a category, add some to the cart and buy some (revenue,
// currency, country), and a share of them who stop coming back (churn). The same seed, sizes and
// end date always produce the same events; they go through the ingestion service in chronological
// chunks, with insert_ids, so seeding twice stores nothing new. Events the generator dates after
// the moment of seeding (later today, or an end date to come) are left out, and nothing else moves:
// every event kept has the same insert_id, time and properties as before.

import type { DemoSeedRequest } from '@tally/client';
import { timeZoneOf } from '../admin/organizations.js';
import type { ServiceContext } from '../context.js';
import { NotFoundError, ValidationError } from '../errors.js';
import { isUuid } from '../ids.js';
import { type Actor, recordAppAction } from '../storage/audit.js';
import { findApp } from '../storage/tenancy.js';
import { setProfiles } from '../storage/users.js';
import { addDays, EARLIEST_DATE, isCalendarDate, LATEST_DATE, localDate, zonedToInstant } from '../time.js';
import { ingest } from './ingestion.js';

export const DEMO_DEFAULTS = { users: 100, days: 30, seed: 1 };
const MAX_USERS = 100_000;
const MAX_DAYS = 730;
const CHUNK = 1_000;

export const DEMO_COUNTRIES = ['US', 'US', 'US', 'FR', 'FR', 'DE', 'DE', 'GB', 'GB', 'BR', 'IN', 'JP'];
export const DEMO_CATEGORIES = ['books', 'electronics', 'games', 'home', 'sports'];
const PRICES: Record<string, number[]> = {
  books: [9.99, 14.5, 24],
  electronics: [49.99, 129, 299.9],
  games: [19.99, 59.99],
  home: [12.75, 34.9, 89],
  sports: [15, 39.99, 74.5],
};

/** mulberry32: a small, fast, seedable generator. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface DemoUser {
  id: string;
  country: string;
  plan: 'free' | 'premium';
  signupDay: number;
  /** Last day of activity (inclusive). */
  lastDay: number;
  engagement: number;
}

export interface DemoEvent {
  userRef: string;
  eventName: string;
  properties: Record<string, unknown>;
  createdAt: Date;
}

/** The demo users and, day by day, their events (chronological within each day). */
export function* demoDays(options: Required<DemoSeedRequest>, timeZone: string) {
  const rand = random(options.seed);
  const pick = <T>(list: T[]) => list[Math.floor(rand() * list.length)]!;
  const users: DemoUser[] = [];
  for (let i = 0; i < options.users; i++) {
    const signupDay = Math.floor(rand() * options.days);
    const churns = rand() < 0.3;
    users.push({
      id: `demo-user-${String(i + 1).padStart(5, '0')}`,
      country: pick(DEMO_COUNTRIES),
      plan: rand() < 0.3 ? 'premium' : 'free',
      signupDay,
      lastDay: churns ? signupDay + Math.floor(rand() * 14) : options.days - 1,
      engagement: 0.3 + 0.4 * rand(),
    });
  }
  const first = addDays(options.end_date, -(options.days - 1));
  for (let day = 0; day < options.days; day++) {
    const date = addDays(first, day);
    const midnight = zonedToInstant(`${date} 00:00:00`, timeZone).getTime();
    const events: DemoEvent[] = [];
    for (const u of users) {
      if (day < u.signupDay || day > u.lastDay) continue;
      const signup = day === u.signupDay;
      if (!signup && rand() >= u.engagement) continue;
      const sessions = 1 + Math.floor(rand() * 2);
      for (let s = 0; s < sessions; s++) {
        let t = midnight + Math.floor((8 + rand() * 14) * 3_600_000);
        const at = () => {
          t += 30_000 + Math.floor(rand() * 240_000);
          return new Date(t);
        };
        if (signup && s === 0) {
          events.push({
            userRef: u.id,
            eventName: 'signup',
            properties: { plan: u.plan, country: u.country },
            createdAt: at(),
          });
        }
        events.push({
          userRef: u.id,
          eventName: 'session_start',
          properties: { platform: pick(['ios', 'android', 'web']) },
          createdAt: at(),
        });
        const views = 1 + Math.floor(rand() * 4);
        for (let v = 0; v < views; v++) {
          const category = pick(DEMO_CATEGORIES);
          const item = `${category}-${1 + Math.floor(rand() * 20)}`;
          events.push({
            userRef: u.id,
            eventName: 'item_view',
            properties: { category, item_id: item },
            createdAt: at(),
          });
          if (rand() < 0.15) {
            events.push({
              userRef: u.id,
              eventName: 'add_to_cart',
              properties: { category, item_id: item },
              createdAt: at(),
            });
            if (rand() < 0.6) {
              const revenue = pick(PRICES[category]!);
              events.push({
                userRef: u.id,
                eventName: 'purchase',
                properties: { revenue, currency: 'USD', country: u.country, category, item_id: item },
                createdAt: at(),
              });
            }
          }
        }
      }
    }
    events.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.userRef < b.userRef ? -1 : 1));
    yield { date, users, events };
  }
}

/** Seeds demo data; with an `actor` (the admin API), the run is recorded in the app's audit trail. */
export async function seedDemo(ctx: ServiceContext, appId: string, input: DemoSeedRequest = {}, actor?: Actor) {
  const app = isUuid(appId) ? await findApp(ctx.db, appId) : undefined;
  if (!app) throw new NotFoundError(`No app ${appId}.`);
  const timeZone = await timeZoneOf(ctx, app.organization_id);
  const options = {
    users: input.users ?? DEMO_DEFAULTS.users,
    days: input.days ?? DEMO_DEFAULTS.days,
    seed: input.seed ?? DEMO_DEFAULTS.seed,
    end_date: input.end_date ?? localDate(ctx.clock(), timeZone),
  };
  if (!isCalendarDate(options.end_date)) {
    throw new ValidationError('Invalid request: /body/end_date is not a calendar date.', [
      { path: '/body/end_date', message: 'is not a calendar date' },
    ]);
  }
  if (
    addDays(options.end_date, 1 - Math.min(options.days, MAX_DAYS)) < EARLIEST_DATE ||
    options.end_date > LATEST_DATE
  ) {
    throw new ValidationError(`Invalid request: demo data must fall between ${EARLIEST_DATE} and ${LATEST_DATE}.`, [
      { path: '/body/end_date', message: `must leave the whole period between ${EARLIEST_DATE} and ${LATEST_DATE}` },
    ]);
  }
  if (options.users > MAX_USERS || options.days > MAX_DAYS) {
    throw new ValidationError(`Invalid request: seed at most ${MAX_USERS} users over at most ${MAX_DAYS} days.`, [
      { path: options.users > MAX_USERS ? '/body/users' : '/body/days', message: 'is too large' },
    ]);
  }
  const prefix = `demo:${options.seed}:${options.users}:${options.days}:${options.end_date}`;
  const receivedAt = ctx.clock();
  let n = 0;
  let stored = 0;
  let users: DemoUser[] = [];
  for (const day of demoDays(options, timeZone)) {
    users = day.users;
    for (let i = 0; i < day.events.length; i += CHUNK) {
      const events = day.events
        .slice(i, i + CHUNK)
        .map((e) => ({
          user_id: e.userRef,
          event_name: e.eventName,
          properties: e.properties,
          timestamp: e.createdAt,
          insert_id: `${prefix}:${n++}`,
        }))
        .filter((e) => e.timestamp <= receivedAt);
      if (events.length === 0) continue;
      const results = await ingest(ctx, { app, source: 'demo', events, at: '/events', now: receivedAt });
      stored += results.filter((r) => !r.duplicate).length;
    }
  }
  // Profile details for the users who were active (the ingestion created them).
  for (let i = 0; i < users.length; i += CHUNK) {
    const chunk = users.slice(i, i + CHUNK);
    await setProfiles(
      ctx.db,
      appId,
      chunk.map((u) => ({
        externalId: u.id,
        email: `${u.id}@example.com`,
        properties: { country: u.country, plan: u.plan },
      })),
    );
  }
  if (actor) {
    await recordAppAction(ctx.db, {
      appId,
      action: 'demo.seed',
      actor,
      at: ctx.clock(),
      details: { ...options, users_created: users.length, events_created: stored },
    });
  }
  return { users: users.length, events: stored };
}
