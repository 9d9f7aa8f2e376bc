// Comparisons of segments: "premium vs free purchases", "iOS vs Android sessions", "Germany vs
// France revenue". The two sides are values of one property, written around "vs"; each becomes a
// side of the query (one row each, in the order written) with its filter placed on the events
// measured or on the users, like any other filter of the question.
import type { Condition, Query, Side } from './ast.js';
import { isFiller, isRole, targetsOf } from './clause.js';
import type { FilterSpec } from './filters.js';
import type { Lexicon } from './lexicon.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { place } from './place.js';

/** A side as written: its label and its filter (or whether its users are new), not yet placed. */
export interface SideSpec {
  label: string;
  spec?: FilterSpec;
  /** "new vs returning users": first seen in the period, or before it. */
  newness?: 'new' | 'returning';
}

const NEWNESS: Record<string, 'new' | 'returning'> = { new: 'new', new_users: 'new', returning: 'returning' };

/** "new vs returning": the sides by when their users were first seen. */
function newnessSides(a: Tagged, b: Tagged): SideSpec[] | null {
  const x = a.kind === 'role' ? NEWNESS[a.role] : undefined;
  const y = b.kind === 'role' ? NEWNESS[b.role] : undefined;
  if (!x || !y || x === y) return null;
  a.used = true;
  b.used = true;
  return [
    { label: a.raw, newness: x },
    { label: b.raw, newness: y },
  ];
}

/** The mention nearest `i` in direction `dir`, past fillers and words for people ("premium users vs free users"). */
function neighbour(ms: Tagged[], i: number, dir: -1 | 1): Tagged | undefined {
  for (let k = i + dir; k >= 0 && k < ms.length; k += dir) {
    const m = ms[k]!;
    if (isFiller(m) || isRole(m, 'users', 'visitors')) continue;
    return m.used ? undefined : m;
  }
  return undefined;
}

/**
 * The two sides around a "vs" when they are values of one property; null otherwise (then "vs"
 * compares periods). The mentions read are marked used.
 */
export function readSides(ms: Tagged[], vs: Tagged): SideSpec[] | null {
  const i = ms.indexOf(vs);
  const a = neighbour(ms, i, -1);
  const b = neighbour(ms, i, 1);
  const byNewness = a && b ? newnessSides(a, b) : null;
  if (byNewness) return byNewness;
  const keysOf = (m: Tagged | undefined) => targetsOf(m, 'value').map((t) => (t as { key: string }).key);
  const shared = keysOf(a).filter((k) => keysOf(b).includes(k));
  if (!a || !b || shared.length === 0) return null;
  const side = (m: Tagged): SideSpec => {
    const values = targetsOf(m, 'value').flatMap((t) => (t.kind === 'value' && shared.includes(t.key) ? t.values : []));
    const spec: FilterSpec = { key: shared[0]!, op: 'in', values: [...new Set(values)], at: m.start };
    if (shared.length > 1) spec.candidates = shared;
    m.used = true;
    return { label: m.raw, spec };
  };
  return [side(a), side(b)];
}

/** The sides placed for the query's events: event filters, or conditions on users. */
export function placeSides(lexicon: Lexicon, sides: SideSpec[], q: Query, scopeEvents: string[]): Side[] {
  const m = q.measure;
  // users from the app's user list (no events measured): a side can only be a condition on users
  const listed = m.kind === 'users' && q.events.events.length === 0 && !q.period;
  const users = m.kind === 'users' && (!listed || !!q.segment);
  if (!(m.kind === 'events' || m.kind === 'aggregate' || m.kind === 'per_user' || users))
    throw new NotUnderstood(
      'Tally compares segments ("premium vs free") on counts of events or users, sums and averages: ask for one of those.',
    );
  if (q.groupBy || q.bucket || q.compare)
    throw new NotUnderstood(
      'A comparison of segments gives one figure per segment: drop the breakdown or the periods.',
    );
  return sides.map(({ label, spec, newness }) => {
    if (newness) return { label, filters: [], segment: newnessCondition(newness, q) };
    const placed = place(lexicon, [spec!], scopeEvents);
    const users: Condition[] = placed.user.map((filter) => ({ type: 'user', filter }));
    if (listed && placed.event.length > 0)
      throw new NotUnderstood(
        `"${label}" is a property of events: compare it on events, e.g. "${label} vs ... purchases last week".`,
      );
    return { label, filters: placed.event, ...(users.length > 0 ? { segment: users[0] } : {}) };
  });
}

/** New users of the period (first seen in it), or returning ones (first seen before it). */
function newnessCondition(newness: 'new' | 'returning', q: Query): Condition {
  const did = q.segment?.type === 'did' ? q.segment : undefined;
  const period = q.period ?? did?.period;
  if (!period || q.measure.kind !== 'users')
    throw new NotUnderstood(
      'New against returning users is a count of users over a period, e.g. "new vs returning users this week".',
    );
  const first: Condition = { type: 'first_seen', period };
  return newness === 'new' ? first : { type: 'not', of: first };
}
