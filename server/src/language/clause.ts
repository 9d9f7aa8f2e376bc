// Pieces both parsers read the same way: numbers with what they count (numbers.ts), filters on
// properties (filters.ts), the roles of mentions (mention-roles.ts), and what turns one clause about
// a user into a condition: its period, and the and/not of conditions.
import type { Bounds, Condition, Period } from './ast.js';
import type { Lexicon } from './lexicon.js';
import { isRole } from './mention-roles.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { mergeAdjacent } from './periods.js';

export { type FilterSpec, takeFilters } from './filters.js';
export { eventsOf, isFiller, isRole, roleOf, targetsOf } from './mention-roles.js';
export { boundsOf, type NumberSpec, takeNumbers } from './numbers.js';

export interface ClauseContext {
  lexicon: Lexicon;
  /** Events of the previous clause, for ellipsis ("bought books but not electronics"). */
  previousEvents?: string[];
  /** The previous clause's condition, for a clause that only changes the period ("... but not this week"). */
  previous?: Condition;
}

/** Numbers of times without a lower bound start at 1: "at most 2 times" is once or twice. */
export function timesBounds(b: Bounds): Bounds {
  return b.gt === undefined && b.gte === undefined ? { ...b, gte: 1 } : b;
}

export const periodOf = (ms: Tagged[]): { period?: Period; raw?: string } => {
  const ps = ms.filter((m) => m.kind === 'period' && !m.used);
  if (ps.length > 1) {
    const merged = mergeAdjacent(ps.map((p) => (p.kind === 'period' ? p.period : null)!));
    if (!merged) throw new NotUnderstood(`Two periods in one condition: "${ps.map((p) => p.raw).join('" and "')}".`);
    for (const p of ps) p.used = true;
    for (const m of ms)
      if (!m.used && isRole(m, 'or', 'and') && m.start > ps[0]!.start && m.end < ps[ps.length - 1]!.end) m.used = true;
    return { period: merged, raw: ps.map((p) => p.raw).join(' and ') };
  }
  const p = ps[0];
  if (p?.kind !== 'period') return {};
  p.used = true;
  return { period: p.period, raw: p.raw };
};

export function and(parts: Condition[]): Condition {
  const flat = parts.flatMap((p) => (p.type === 'and' ? p.of : [p]));
  return flat.length === 1 ? flat[0]! : { type: 'and', of: flat };
}

export function not(c: Condition): Condition {
  return c.type === 'not' ? c.of : { type: 'not', of: c };
}
