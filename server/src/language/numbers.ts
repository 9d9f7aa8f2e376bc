// Numbers with what they count or compare, for both parsers: "more than 5 purchases", "over $100",
// "2 to 4 times", "revenue > 100", "at least twice", "10+ sessions".
import type { Bounds, Op } from './ast.js';
import { eventsOf, isRole, markUsed, roleOf, targetsOf } from './mention-roles.js';
import type { Tagged } from './mentions.js';
import { NUMBER_WORDS } from './period-words.js';
import { SKIPPABLE } from './words.js';

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
type NumberMention = Extract<Tagged, { kind: 'number' }>;

/** A number mention, or a number word that counts something ("exactly one purchase"). */
function num(m: Tagged | undefined): NumberMention | null {
  if (!m || m.used) return null;
  if (m.kind === 'number') return m;
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
}

/** The bounds written from mention i, and the last mention they take. */
interface Written {
  bounds: Bounds;
  last: number;
  money: boolean;
  percent: boolean;
}

/**
 * The bounds of a number written at i ("between 2 and 4", "more than 5", "3 or more", "10+"), or
 * null. A number of times that stands alone ("twice", "more than once") is pushed to `out` at once.
 */
function boundsAt(ms: Tagged[], i: number, out: NumberSpec[]): Written | null {
  const m = ms[i]!;
  const n0 = num(m);
  if (
    isRole(m, 'between') &&
    num(ms[i + 1]) &&
    (isRole(ms[i + 2], 'and', 'to') || (ms[i + 2]?.kind === 'symbol' && ms[i + 2]!.raw === '-')) &&
    num(ms[i + 3])
  ) {
    const a = num(ms[i + 1])!;
    const b = num(ms[i + 3])!;
    const bounds = { gte: Math.min(a.value, b.value), lte: Math.max(a.value, b.value) };
    return { bounds, last: i + 3, money: a.money || b.money, percent: false };
  }
  if (
    n0 &&
    isRole(ms[i + 1], 'to') &&
    num(ms[i + 2]) &&
    (isRole(ms[i + 3], 'times') || eventsOf(ms[i + 3]) || n0.money)
  ) {
    const b = num(ms[i + 2])!;
    const bounds = { gte: Math.min(n0.value, b.value), lte: Math.max(n0.value, b.value) };
    return { bounds, last: i + 2, money: n0.money || b.money, percent: false };
  }
  const op = cmpAt(m);
  if (op) {
    const n = num(ms[i + 1]);
    const w = ms[i + 1]?.kind === 'role' ? TIMES_WORDS[roleOf(ms[i + 1])] : undefined;
    if (n) return { bounds: boundsOf(op, n.value), last: i + 1, money: n.money, percent: n.percent };
    if (w !== undefined) {
      out.push({ bounds: boundsOf(op, w), unit: 'times', at: i });
      markUsed(ms, i, i + 1);
    }
    return null;
  }
  if (n0 && isRole(ms[i + 1], 'or_more', 'or_less')) {
    const bounds = roleOf(ms[i + 1]) === 'or_more' ? { gte: n0.value } : { lte: n0.value };
    return { bounds, last: i + 1, money: n0.money, percent: false };
  }
  if (n0 && ms[i + 1]?.kind === 'symbol' && ms[i + 1]!.raw === '+')
    return { bounds: { gte: n0.value }, last: i + 1, money: false, percent: false };
  if (n0 && !n0.ordinal && (isRole(ms[i + 1], 'times') || eventsOf(ms[i + 1]) || isRole(ms[i + 1], 'event_word')))
    return { bounds: { gte: n0.value, lte: n0.value }, last: i, money: false, percent: false };
  if (m.kind === 'role' && TIMES_WORDS[m.role] !== undefined) {
    const n = TIMES_WORDS[m.role]!;
    out.push({ bounds: { gte: n, lte: n }, unit: 'times', at: i });
    m.used = true;
  }
  return null;
}

/** What the number counts, after it ("5 purchases", "3 times", "100 revenue"); returns the new last. */
function countedAfter(ms: Tagged[], spec: NumberSpec, last: number, money: boolean): number {
  const after = ms[last + 1];
  if (isRole(after, 'times')) {
    spec.unit = 'times';
    return last + 1;
  }
  if (!money && eventsOf(after) && !after!.used) {
    spec.unit = 'times';
    spec.events = eventsOf(after)!;
    return last + 1;
  }
  if (!money && isRole(after, 'event_word')) {
    spec.unit = 'times';
    spec.anyEvent = true;
    return last + 1;
  }
  if (!money && targetsOf(after, 'key').length === 1 && !after!.used && SKIPPABLE.has(after!.raw.toLowerCase())) {
    // "at least 3 items": a number of times
    spec.unit = 'times';
    return last + 1;
  }
  if (targetsOf(after, 'key').length === 1 && !after!.used) {
    spec.key = (targetsOf(after, 'key')[0] as { key: string }).key;
    return last + 1;
  }
  if (isRole(after, 'money') && !after!.used) {
    spec.unit = 'money';
    return last + 1;
  }
  return last;
}

/** What the number is compared with, before it ("revenue > 100", "email is ..."); returns the new first. */
function comparedBefore(ms: Tagged[], spec: NumberSpec, first: number): number {
  const before = ms[first - 1]?.kind === 'role' && roleOf(ms[first - 1]) === 'is' ? first - 2 : first - 1;
  if (spec.key || spec.unit === 'times' || before < 0 || ms[before]!.used) return first;
  const k = targetsOf(ms[before], 'key');
  const f = targetsOf(ms[before], 'field');
  if (k.length === 1) {
    spec.key = (k[0] as { key: string }).key;
    return before;
  }
  if (f.length === 1) {
    spec.key = (f[0] as { field: string }).field;
    spec.field = true;
    return before;
  }
  if (isRole(ms[before], 'money') || isRole(ms[before], 'sales')) {
    spec.unit = 'money';
    spec.moneyWord = true;
    return before;
  }
  return first;
}

/** Finds the numbers of a run of mentions with what they measure, and marks them used. */
export function takeNumbers(ms: Tagged[]): NumberSpec[] {
  const out: NumberSpec[] = [];
  for (let i = 0; i < ms.length; i++) {
    if (ms[i]!.used) continue;
    const written = boundsAt(ms, i, out);
    if (!written) continue;
    const { bounds, money, percent } = written;
    const spec: NumberSpec = { bounds, unit: money ? 'money' : percent ? 'percent' : 'plain', at: i };
    const last = countedAfter(ms, spec, written.last, money);
    const first = comparedBefore(ms, spec, i);
    markUsed(ms, first, last);
    out.push(spec);
  }
  return out;
}
