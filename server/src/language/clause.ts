// Pieces both parsers read the same way: numbers with what they count ("more than 5 purchases",
// "over $100", "2 to 4 times"), filters on properties ("plan is premium", "non-US", "ios or
// android", "whose email ends with @example.com"), and one clause about a user turned into a
// condition ("bought electronics at least twice this month", "have not been active for 14 days").
import type { Bounds, Condition, Filter, Op, Period, Scalar } from './ast.js';
import type { Lexicon, Target } from './lexicon.js';
import type { Tagged } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import { NUMBER_WORDS } from './period-phrases.js';
import { mergeAdjacent } from './periods.js';
import { FILLERS, SKIPPABLE } from './words.js';

export const isRole = (m: Tagged | undefined, ...roles: string[]): boolean =>
  m?.kind === 'role' && (roles.length === 0 || roles.includes(m.role));
export const roleOf = (m: Tagged | undefined): string => (m?.kind === 'role' ? m.role : '');
export const targetsOf = (m: Tagged | undefined, kind?: Target['kind']): Target[] =>
  m?.kind === 'target' ? m.targets.filter((t) => kind === undefined || t.kind === kind) : [];
export const isFiller = (m: Tagged | undefined): boolean =>
  !!m &&
  ((m.kind === 'word' && FILLERS.has(m.word)) ||
    (m.kind === 'symbol' && [',', '.', '?', '!', ';', ':'].includes(m.text)));

/** Events named by a mention (events, or the events of "buyers"). */
export function eventsOf(m: Tagged | undefined): string[] | null {
  const t = targetsOf(m).filter((x) => x.kind === 'event' || x.kind === 'agent');
  if (t.length === 0) return null;
  return [...new Set(t.flatMap((x) => (x.kind === 'event' || x.kind === 'agent' ? x.events : [])))];
}

const CMP: Record<string, Op> = { 'cmp:gt': 'gt', 'cmp:gte': 'gte', 'cmp:lt': 'lt', 'cmp:lte': 'lte', 'cmp:eq': 'eq' };
const SYMBOL_OPS: Record<string, Op> = {
  '>': 'gt',
  '>=': 'gte',
  '<': 'lt',
  '<=': 'lte',
  '=': 'eq',
  '==': 'eq',
  '!=': 'neq',
  '<>': 'neq',
};

export function boundsOf(op: Op, n: number): Bounds {
  if (op === 'gt') return { gt: n };
  if (op === 'gte') return { gte: n };
  if (op === 'lt') return { lt: n };
  if (op === 'lte') return { lte: n };
  return { gte: n, lte: n };
}

function cmpAt(m: Tagged | undefined): Op | null {
  if (!m || m.used) return null;
  if (m.kind === 'role' && CMP[m.role]) return CMP[m.role]!;
  if (m.kind === 'symbol' && SYMBOL_OPS[m.text] && SYMBOL_OPS[m.text] !== 'neq') return SYMBOL_OPS[m.text]!;
  return null;
}

const TIMES_WORDS: Record<string, number> = { once: 1, twice: 2, thrice: 3 };
/** Number words read as numbers when they count something ("exactly one purchase"). */
const WORD_NUMBERS = new Set([
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'fifteen',
  'twenty',
  'thirty',
  'fifty',
  'hundred',
]);

export interface NumberSpec {
  bounds: Bounds;
  /** What is counted or compared. */
  unit: 'times' | 'money' | 'plain' | 'percent';
  /** "more than 5 purchases": the events counted. */
  events?: string[];
  /** "more than 100 events": any event. */
  anyEvent?: boolean;
  /** "revenue > 100": the property compared. */
  key?: string;
  /** The key is a user column (email, phone). */
  field?: boolean;
  /** Written after a money word ("spent over $100", "revenue above 50"). */
  moneyWord?: boolean;
  at: number;
}

/** Finds the numbers of a run of mentions with what they measure, and marks them used. */
export function takeNumbers(ms: Tagged[]): NumberSpec[] {
  const out: NumberSpec[] = [];
  const num = (m: Tagged | undefined) => {
    if (!m || m.used) return null;
    if (m.kind === 'number') return m;
    // "exactly one purchase", "at least three times"
    if (m.kind === 'word' && WORD_NUMBERS.has(m.word))
      return {
        ...m,
        kind: 'number' as const,
        value: NUMBER_WORDS[m.word]!,
        money: false,
        percent: false,
        ordinal: false,
      };
    return null;
  };
  for (let i = 0; i < ms.length; i++) {
    const m = ms[i]!;
    if (m.used) continue;
    let bounds: Bounds | null = null;
    let first = i;
    let last = i;
    let money = false;
    let percent = false;
    // between N and M / N to M
    if (
      isRole(m, 'between') &&
      num(ms[i + 1]) &&
      (isRole(ms[i + 2], 'and', 'to') || (ms[i + 2]?.kind === 'symbol' && ms[i + 2]!.raw === '-')) &&
      num(ms[i + 3])
    ) {
      const a = num(ms[i + 1])!;
      const b = num(ms[i + 3])!;
      bounds = { gte: Math.min(a.value, b.value), lte: Math.max(a.value, b.value) };
      money = a.money || b.money;
      last = i + 3;
    } else if (
      num(m) &&
      isRole(ms[i + 1], 'to') &&
      num(ms[i + 2]) &&
      (isRole(ms[i + 3], 'times') || eventsOf(ms[i + 3]) || num(m)!.money)
    ) {
      const b = num(ms[i + 2])!;
      bounds = { gte: Math.min(num(m)!.value, b.value), lte: Math.max(num(m)!.value, b.value) };
      money = num(m)!.money || b.money;
      last = i + 2;
    } else if (cmpAt(m)) {
      const op = cmpAt(m)!;
      const n = num(ms[i + 1]);
      const w = ms[i + 1]?.kind === 'role' ? TIMES_WORDS[roleOf(ms[i + 1])] : undefined;
      if (n) {
        bounds = boundsOf(op, n.value);
        money = n.money;
        percent = n.percent;
        last = i + 1;
      } else if (w !== undefined) {
        bounds = boundsOf(op, w);
        last = i + 1;
        out.push({ bounds, unit: 'times', at: i });
        markUsed(ms, i, last);
        continue;
      } else continue;
    } else if (num(m) && isRole(ms[i + 1], 'or_more', 'or_less')) {
      bounds = roleOf(ms[i + 1]) === 'or_more' ? { gte: num(m)!.value } : { lte: num(m)!.value };
      money = num(m)!.money;
      last = i + 1;
    } else if (num(m) && ms[i + 1]?.kind === 'symbol' && ms[i + 1]!.raw === '+') {
      bounds = { gte: num(m)!.value };
      last = i + 1;
    } else if (
      num(m) &&
      !num(m)!.ordinal &&
      (isRole(ms[i + 1], 'times') || eventsOf(ms[i + 1]) || isRole(ms[i + 1], 'event_word'))
    ) {
      bounds = { gte: num(m)!.value, lte: num(m)!.value };
    } else if (m.kind === 'role' && TIMES_WORDS[m.role] !== undefined) {
      const n = TIMES_WORDS[m.role]!;
      out.push({ bounds: { gte: n, lte: n }, unit: 'times', at: i });
      m.used = true;
      continue;
    } else continue;
    // what the number counts: after it ("5 purchases", "3 times") or before ("revenue > 100")
    const after = ms[last + 1];
    const spec: NumberSpec = { bounds, unit: money ? 'money' : percent ? 'percent' : 'plain', at: first };
    if (isRole(after, 'times')) {
      spec.unit = 'times';
      last++;
    } else if (!money && eventsOf(after) && !after!.used) {
      spec.unit = 'times';
      spec.events = eventsOf(after)!;
      last++;
    } else if (!money && isRole(after, 'event_word')) {
      spec.unit = 'times';
      spec.anyEvent = true;
      last++;
    } else if (
      !money &&
      targetsOf(after, 'key').length === 1 &&
      !after!.used &&
      SKIPPABLE.has(after!.raw.toLowerCase())
    ) {
      // "at least 3 items": a number of times
      spec.unit = 'times';
      last++;
    } else if (targetsOf(after, 'key').length === 1 && !after!.used) {
      spec.key = (targetsOf(after, 'key')[0] as { key: string }).key;
      last++;
    } else if (isRole(after, 'money') && !after!.used) {
      spec.unit = 'money';
      last++;
    }
    const before = ms[first - 1]?.kind === 'role' && roleOf(ms[first - 1]) === 'is' ? first - 2 : first - 1;
    if (!spec.key && spec.unit !== 'times' && before >= 0 && !ms[before]!.used) {
      const k = targetsOf(ms[before], 'key');
      const f = targetsOf(ms[before], 'field');
      if (k.length === 1) {
        spec.key = (k[0] as { key: string }).key;
        first = before;
      } else if (f.length === 1) {
        spec.key = (f[0] as { field: string }).field;
        spec.field = true;
        first = before;
      } else if (isRole(ms[before], 'money') || isRole(ms[before], 'sales')) {
        spec.unit = 'money';
        spec.moneyWord = true;
        first = before;
      }
    }
    markUsed(ms, first, last);
    out.push(spec);
  }
  return out;
}

function markUsed(ms: Tagged[], a: number, b: number) {
  for (let k = a; k <= b; k++) if (ms[k]) ms[k]!.used = true;
}

export interface FilterSpec extends Filter {
  /** Keys the value may belong to when a bare value is ambiguous. */
  candidates?: string[];
  /** A user column (email, phone, user_id). */
  field?: boolean;
  at: number;
}

const VALUE_SEPARATORS = ['or', 'and'];

/** Finds property filters ("plan is premium", "premium plan", "non-US", "ios or android"). */
export function takeFilters(ms: Tagged[]): FilterSpec[] {
  const out: FilterSpec[] = [];
  const next = (i: number) => {
    let k = i + 1;
    while (k < ms.length && isFiller(ms[k]) && !ms[k]!.used && ms[k]!.kind === 'symbol' && ms[k]!.raw === ':') k++;
    return k;
  };
  // key [is | = | is not | contains | one of ...] value(s)
  for (let i = 0; i < ms.length; i++) {
    const m = ms[i]!;
    if (m.used) continue;
    const keyTargets = targetsOf(m, 'key');
    const fieldTargets = targetsOf(m, 'field');
    if (keyTargets.length !== 1 && fieldTargets.length !== 1) continue;
    const key =
      keyTargets.length === 1 ? (keyTargets[0] as { key: string }).key : (fieldTargets[0] as { field: string }).field;
    const field = keyTargets.length !== 1;
    let k = next(i);
    let op: Op | null = null;
    const o = ms[k];
    if (isRole(o, 'is', 'cmp:eq') || (o?.kind === 'symbol' && (o.raw === '=' || o.raw === '==' || o.raw === ':'))) {
      op = 'eq';
      k++;
      if (isRole(ms[k], 'not')) {
        op = 'neq';
        k++;
      }
      if (isRole(ms[k], 'one_of')) {
        op = op === 'neq' ? 'not_in' : 'in';
        k++;
      }
      if (roleOf(ms[k]).startsWith('op:')) {
        op = roleOf(ms[k]).slice(3) as Op;
        k++;
      }
    } else if (isRole(o, 'is_not') || (o?.kind === 'symbol' && (o.raw === '!=' || o.raw === '<>'))) {
      op = 'neq';
      k++;
      if (isRole(ms[k], 'one_of')) {
        op = 'not_in';
        k++;
      }
    } else if (isRole(o, 'one_of')) {
      op = 'in';
      k++;
    } else if (roleOf(o).startsWith('op:')) {
      op = roleOf(o).slice(3) as Op;
      k++;
    } else if (isRole(o, 'not') && roleOf(ms[k + 1]).startsWith('op:')) {
      const inner = roleOf(ms[k + 1]).slice(3);
      op = inner === 'contains' ? 'not_contains' : inner === 'exists' ? 'not_exists' : null;
      if (!op) continue;
      k += 2;
    } else if (o && !o.used && targetsOf(o, 'value').some((t) => t.kind === 'value' && t.key === key)) {
      op = 'eq';
    } else continue;
    if (op === 'exists' || op === 'not_exists') {
      out.push({ key, op, values: [], field, at: i });
      markUsed(ms, i, k - 1);
      continue;
    }
    const values: Scalar[] = [];
    let end = k;
    for (;;) {
      const v = ms[end];
      if (!v || v.used) break;
      const value = valueFor(v, key);
      if (value === null) break;
      values.push(value);
      end++;
      if (
        (isRole(ms[end], ...VALUE_SEPARATORS) || (ms[end]?.kind === 'symbol' && ms[end]!.raw === ',')) &&
        ms[end + 1] &&
        valueFor(ms[end + 1]!, key) !== null &&
        (op === 'in' || op === 'not_in' || op === 'eq' || op === 'neq')
      ) {
        if (
          op === 'eq' &&
          isRole(ms[end], 'and') &&
          !targetsOf(ms[end + 1], 'value').length &&
          ms[end + 1]!.kind !== 'quoted'
        )
          break;
        end++;
        continue;
      }
      break;
    }
    if (values.length === 0) continue;
    if (values.length > 1) op = op === 'neq' || op === 'not_in' ? 'not_in' : op === 'eq' || op === 'in' ? 'in' : op;
    if (values.length > 1 && op !== 'in' && op !== 'not_in')
      throw new NotUnderstood(`"${m.raw}" takes one value there.`);
    out.push({ key, op, values, field, at: i });
    markUsed(ms, i, end - 1);
  }
  // value then key: "premium plan", "books category"
  for (let i = 0; i + 1 < ms.length; i++) {
    const v = ms[i]!;
    const k = ms[i + 1]!;
    if (v.used || k.used) continue;
    const keys = targetsOf(k, 'key').map((t) => (t as { key: string }).key);
    const hit = targetsOf(v, 'value').find((t) => t.kind === 'value' && keys.includes(t.key)) as
      | { key: string; values: string[] }
      | undefined;
    if (!hit) continue;
    const negated = negatedBefore(ms, i);
    out.push({ key: hit.key, op: negated ? 'not_in' : 'in', values: hit.values, at: i });
    markUsed(ms, i, i + 1);
    if (negated) negated.used = true;
  }
  // bare values, in runs: "ios or android", "France, Germany"
  for (let i = 0; i < ms.length; i++) {
    const v = ms[i]!;
    if (v.used || targetsOf(v, 'value').length === 0) continue;
    const run = [v];
    let j = i + 1;
    while (
      j + 1 < ms.length &&
      (isRole(ms[j], 'or', 'and') || (ms[j]?.kind === 'symbol' && ms[j]!.raw === ',')) &&
      !ms[j + 1]!.used &&
      sharedKeys([...run, ms[j + 1]!]).length > 0
    ) {
      run.push(ms[j + 1]!);
      j += 2;
    }
    const keys = sharedKeys(run);
    const negated = negatedBefore(ms, i);
    const values = (key: string) =>
      run.flatMap((x) =>
        targetsOf(x, 'value')
          .filter((t) => t.kind === 'value' && t.key === key)
          .flatMap((t) => (t as { values: string[] }).values),
      );
    const key = keys[0]!;
    const spec: FilterSpec = { key, op: negated ? 'not_in' : 'in', values: [...new Set(values(key))], at: i };
    if (keys.length > 1) spec.candidates = keys;
    out.push(spec);
    for (const x of ms.slice(i, j)) x.used = true;
    if (negated) negated.used = true;
    i = j - 1;
  }
  return out;
}

function sharedKeys(run: Tagged[]): string[] {
  const sets = run.map((m) => new Set(targetsOf(m, 'value').map((t) => (t as { key: string }).key)));
  return [...sets[0]!].filter((k) => sets.every((s) => s.has(k)));
}

/** A negation word right before a value ("non-US", "not from France", "excluding the US"). */
function negatedBefore(ms: Tagged[], i: number): Tagged | null {
  let k = i - 1;
  while (
    k >= 0 &&
    !ms[k]!.used &&
    isFiller(ms[k]) &&
    ms[k]!.kind === 'word' &&
    ['from', 'in', 'the', 'on', 'of', 'a', 'an'].includes(ms[k]!.raw.toLowerCase())
  )
    k--;
  const m = ms[k];
  return m && !m.used && isRole(m, 'not') ? m : null;
}

function valueFor(m: Tagged, key: string): Scalar | null {
  if (m.kind === 'quoted') return m.text;
  if (m.kind === 'number' && !m.money && !m.percent) return m.value;
  if (m.kind === 'target') {
    const own = m.targets.find((t) => t.kind === 'value' && t.key === key) as { values: string[] } | undefined;
    if (own) return own.values[0]!;
    return m.quoted || m.targets.some((t) => t.kind === 'value') ? m.raw : null;
  }
  if (
    m.kind === 'word' &&
    !FILLERS.has(m.word) &&
    !['and', 'or', 'who', 'whose', 'which', 'where', 'but'].includes(m.word)
  ) {
    return m.raw;
  }
  if (m.kind === 'symbol' && m.raw.startsWith('@')) return m.raw;
  if (m.kind === 'date_text') return m.text;
  return null;
}

// ---------------------------------------------------------------------------------------------

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
