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

/** A side as written: its label and its filter, not yet placed. */
export interface SideSpec {
  label: string;
  spec: FilterSpec;
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
  const users = m.kind === 'users' && (q.events.events.length > 0 || !!q.period);
  if (!(m.kind === 'events' || m.kind === 'aggregate' || m.kind === 'per_user' || users))
    throw new NotUnderstood(
      'Tally compares segments ("premium vs free") on counts of events or users, sums and averages: ask for one of those.',
    );
  if (q.groupBy || q.bucket || q.compare)
    throw new NotUnderstood(
      'A comparison of segments gives one figure per segment: drop the breakdown or the periods.',
    );
  return sides.map(({ label, spec }) => {
    const placed = place(lexicon, [spec], scopeEvents);
    const users: Condition[] = placed.user.map((filter) => ({ type: 'user', filter }));
    return { label, filters: placed.event, ...(users.length > 0 ? { segment: users[0] } : {}) };
  });
}
