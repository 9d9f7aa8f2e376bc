// Decides where a filter applies: on the events measured (when they carry the property) or on
// their users (a user property, joined); refuses a property that no event or user has, a value
// never seen, or a numeric comparison on text. This is what keeps "revenue where plan is premium"
// (plan is a user property) and "purchases where browser is chrome" (no such property) honest.
import type { Filter } from './ast.js';
import type { FilterSpec } from './clause.js';
import type { Lexicon, PropertyStats } from './lexicon.js';
import { NotUnderstood } from './not-understood.js';

const NUMERIC_OPS = new Set(['gt', 'gte', 'lt', 'lte', 'between']);
const VALUE_OPS = new Set(['eq', 'neq', 'in', 'not_in']);

export interface Placed {
  event: Filter[];
  user: Filter[];
}

/** Stats of a key over some events (merged), or of the user property. */
export function statsOf(lexicon: Lexicon, key: string, events: string[] | 'user'): PropertyStats | null {
  if (events === 'user') return lexicon.userProperties.get(key) ?? null;
  const all = events.map((e) => lexicon.eventProperty(e, key)).filter((p): p is PropertyStats => !!p);
  if (all.length === 0) return null;
  const values = new Map<string, number>();
  for (const p of all) for (const v of p.values) values.set(v.value, (values.get(v.value) ?? 0) + v.count);
  return {
    key,
    numeric: all.some((p) => p.numeric),
    text: all.some((p) => p.text),
    boolean: all.some((p) => p.boolean),
    array: all.some((p) => p.array),
    count: all.reduce((n, p) => n + p.count, 0),
    values: [...values].map(([value, count]) => ({ value, count })).sort((a, b) => b.count - a.count),
    complete: all.every((p) => p.complete),
  };
}

/**
 * Where a key applies for these events: `event` when every one of them carries it, else `user`
 * when users have it, else `event` when some of them carry it; null when none does.
 */
export function scopeOf(lexicon: Lexicon, key: string, events: string[]): 'event' | 'user' | null {
  const carriers = events.filter((e) => lexicon.eventProperty(e, key));
  if (events.length > 0 && carriers.length === events.length) return 'event';
  if (lexicon.userProperties.has(key)) return 'user';
  if (carriers.length > 0) return 'event';
  return null;
}

/** The events a filter or measure is about: the named ones, or every event of the app. */
export const relevantEvents = (lexicon: Lexicon, events: string[]) =>
  events.length > 0 ? events : lexicon.events.map((e) => e.name);

/** Places filters on the events (named, or `relevant` when none) or on their users. */
export function place(lexicon: Lexicon, specs: FilterSpec[], events: string[]): Placed {
  const out: Placed = { event: [], user: [] };
  for (const spec of specs) {
    if (spec.field) {
      if (NUMERIC_OPS.has(spec.op))
        throw new NotUnderstood(`"${spec.key}" is text: it cannot be more or less than a number.`);
      out.user.push({ key: spec.key, op: spec.op, values: spec.values });
      continue;
    }
    let key = spec.key;
    if (spec.candidates && spec.candidates.length > 1) {
      const onEvents = spec.candidates.filter(
        (k) => events.length > 0 && events.every((e) => lexicon.eventProperty(e, k)),
      );
      const pick = onEvents.length === 1 ? onEvents : spec.candidates.filter((k) => lexicon.userProperties.has(k));
      if (pick.length !== 1) {
        throw new NotUnderstood(
          `"${spec.values.join(', ')}" is a value of several properties (${spec.candidates.join(', ')}): name the one you mean, e.g. "${spec.candidates[0]} is ${spec.values[0]}".`,
        );
      }
      key = pick[0]!;
    }
    const scope = scopeOf(lexicon, key, relevantEvents(lexicon, events));
    if (!scope) {
      const what = events.length > 0 ? `"${events.join('", "')}" events` : 'events';
      throw new NotUnderstood(`Neither ${what} nor users have a property "${key}".`, [key]);
    }
    const carriers =
      scope === 'event' ? relevantEvents(lexicon, events).filter((e) => lexicon.eventProperty(e, key)) : [];
    const stats = statsOf(lexicon, key, scope === 'user' ? 'user' : carriers)!;
    check(spec, stats, scope);
    const filter: Filter = { key, op: spec.op, values: spec.values };
    (scope === 'event' ? out.event : out.user).push(filter);
  }
  return out;
}

function check(spec: FilterSpec, stats: PropertyStats, scope: 'event' | 'user') {
  const where = scope === 'user' ? 'user property' : 'event property';
  if (NUMERIC_OPS.has(spec.op)) {
    if (!stats.numeric) throw new NotUnderstood(`The ${where} "${stats.key}" holds text, not numbers.`);
    if (spec.values.some((v) => typeof v !== 'number'))
      throw new NotUnderstood(`"${stats.key}" is compared with a number.`);
    return;
  }
  if (!VALUE_OPS.has(spec.op)) return;
  for (const v of spec.values) {
    if (typeof v === 'number' && stats.numeric) continue;
    if (typeof v === 'boolean' || (typeof v === 'string' && /^(true|false)$/i.test(v) && stats.boolean)) continue;
    const seen = stats.values.some((x) => x.value.toLowerCase() === String(v).toLowerCase());
    if (!seen && stats.complete) {
      const known = stats.values.slice(0, 8).map((x) => x.value);
      throw new NotUnderstood(
        `No ${scope === 'user' ? 'user' : 'event'} has ${stats.key} "${clip(String(v))}"${known.length ? `; seen values: ${known.join(', ')}` : ''}.`,
        [clip(String(v))],
      );
    }
  }
}

/** User text quoted back, kept short. */
export const clip = (s: string, n = 60) => (s.length > n ? `${s.slice(0, n)}…` : s);
