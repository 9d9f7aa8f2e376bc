// The guard against confident wrong numbers. Some words change what a text means: a negation
// ("never", "didn't"), an order of events ("then", "went on to"), a figure per user ("per user",
// "each", "one user"), "both", a second period. The parsers may read such a word as filler, or
// read the rest without it; the answer would then look right and be wrong. So, once a text is
// read, each of these words must show in what was read (a `not`, a grouping by user, an `and` of
// two conditions, each period in place), or the text is refused: the refusal says which word
// could not be placed and offers rephrasings, in the app's own words, that the engine answers.
import type { Condition, Period, Query } from './ast.js';
import { nameWords } from './lexicon.js';
import type { Reading } from './mentions.js';
import { NotUnderstood } from './not-understood.js';
import type { Token } from './tokens.js';

const NEGATIONS = new Set([
  'not',
  'never',
  'no',
  'none',
  'without',
  'non',
  'nobody',
  'neither',
  'nor',
  'except',
  'excluding',
]);
const SEQUENCE = new Set(['then', 'afterwards', 'afterward', 'subsequently', 'later', 'after', 'before', 'followed']);
const PEOPLE = new Set([
  'user',
  'users',
  'customer',
  'customers',
  'buyer',
  'buyers',
  'person',
  'people',
  'visitor',
  'visitors',
  'head',
  'member',
  'members',
  'account',
  'accounts',
  'shopper',
  'shoppers',
  'client',
  'clients',
  'ppl',
]);
/** Words that ask for an amount of money; "how many" with none of them asks for a count. */
const MONEY = new Set(['revenue', 'rev', 'spend', 'spent', 'spending', 'sales', 'money', 'income', 'much', 'value']);
const NEGATIVE_OPS = new Set(['neq', 'not_in', 'not_contains', 'not_exists']);

/** What the engine read, as facts the guard checks words against. */
interface Facts {
  negations: number;
  perUser: boolean;
  /** A figure per user reduced to one number (max, average... of users' totals). */
  perUserAggregate: boolean;
  grouped: boolean;
  /** A first-seen condition, new users, or a signup-like event was read. */
  signup: boolean;
  /** Sequences read ("then" placed). */
  sequences: number;
  /** Sets of two or more events read as "either of them". */
  either: number;
  /** The answer is an amount (a sum, average or extreme of a property), not a count. */
  amount: boolean;
  both: boolean;
  periods: Period[];
  events: string[];
}

/** A word the reading has no place for, and why it matters. */
interface Unplaced {
  word: string;
  kind: 'negation' | 'sequence' | 'per_user' | 'each' | 'both' | 'period' | 'count' | 'dropped';
}

/** Refuses (NotUnderstood) when a meaning-changing word of the text does not show in `read`. */
export function guardMeaning(reading: Reading, read: Query | Condition, kind: 'question' | 'criteria'): void {
  if (kind === 'question') refuseUnreadFilters(read as Query);
  const facts = kind === 'question' ? queryFacts(read as Query) : conditionFacts(read as Condition);
  const missing = unplaced(reading, facts, kind);
  if (!missing) return;
  throw new NotUnderstood(teach(missing, reading), [missing.word], rephrase(missing, reading, facts, kind));
}

/**
 * A ratio (a figure per user, a share) is computed from its two parts alone: filters left on the
 * query's events would not be in the answer, which would then count other events. Refused, with the
 * two numbers the engine can give instead.
 */
function refuseUnreadFilters(q: Query): void {
  if (q.measure.kind !== 'ratio' || q.events.filters.length === 0) return;
  const what = q.events.filters
    .map((f) => `${f.key} ${f.op === 'in' || f.op === 'eq' ? 'is' : f.op} ${f.values.join(' or ')}`)
    .join(' and ');
  const event = q.measure.numerator.events[0] ?? 'events';
  throw new NotUnderstood(
    `Tally cannot yet apply "${what}" to a figure per user or a share: it would be left out of the answer, which would then count every ${event}. Ask for the two numbers apart.`,
    [what],
    [`how many ${event} where ${what}`, `how many users did ${event} where ${what}`],
  );
}

/** Token indices covered by time expressions: their words ("before", "no") belong to the period. */
function periodTokens(reading: Reading): Set<number> {
  const inside = new Set<number>();
  for (const m of reading.mentions)
    if (m.kind === 'period' || m.kind === 'period_error') for (let i = m.start; i < m.end; i++) inside.add(i);
  return inside;
}

const word = (t: Token | undefined) => (t && (t.kind === 'word' || t.kind === 'symbol') ? t.text : '');

function unplaced(reading: Reading, facts: Facts, kind: 'question' | 'criteria'): Unplaced | null {
  const { tokens } = reading;
  const inPeriod = periodTokens(reading);
  let negations = 0;
  let firstNegation = '';
  for (let i = 0; i < tokens.length; i++) {
    if (inPeriod.has(i)) continue;
    const w = word(tokens[i]);
    const next = word(tokens[i + 1]);
    if (SEQUENCE.has(w) && facts.sequences === 0) return { word: tokens[i]!.raw, kind: 'sequence' };
    if (
      ['went', 'go', 'goes', 'going', 'gone'].includes(w) &&
      next === 'on' &&
      word(tokens[i + 2]) === 'to' &&
      facts.sequences === 0
    )
      return { word: 'went on to', kind: 'sequence' };
    // "no. of signups" and "no of" are "number of"
    if (NEGATIONS.has(w) && !(w === 'no' && (next === '.' || next === 'of'))) {
      negations++;
      firstNegation ||= tokens[i]!.raw;
    }
    if (w === 'both' && !facts.both) return { word: 'both', kind: 'both' };
    if (kind === 'question') {
      const person = PEOPLE.has(next) ? next : PEOPLE.has(word(tokens[i + 2])) ? word(tokens[i + 2]) : '';
      const single = ['one', 'single', 'any'].includes(w) || (w === 'a' && next === 'single');
      if (single && person && !facts.perUserAggregate)
        return { word: `${tokens[i]!.raw} ${next === person ? person : `${next} ${person}`}`, kind: 'per_user' };
      if ((w === 'per' || w === 'each' || w === 'every') && person && !facts.perUser)
        return { word: `${tokens[i]!.raw} ${next === person ? person : `${next} ${person}`}`, kind: 'per_user' };
      if (w === 'each' && !person && !facts.grouped) return { word: 'each', kind: 'each' };
    }
  }
  if (negations > facts.negations) return { word: firstNegation, kind: 'negation' };
  const signedUp = reading.mentions.find((m) => m.kind === 'role' && m.role === 'first_seen');
  if (signedUp && !facts.signup) return { word: signedUp.raw, kind: 'dropped' };
  if (facts.either > 0 && eventMentions(reading) >= 2 && !tokens.some((t) => EITHER.has(word(t))))
    return { word: 'and', kind: 'both' };
  if (kind === 'question' && facts.amount && asksCount(tokens)) return { word: 'how many', kind: 'count' };
  for (const m of reading.mentions) {
    if (m.kind !== 'period') continue;
    const parts = m.parts ?? [m.period];
    if (!parts.every((p) => facts.periods.some((q) => samePlace(p, q)))) return { word: m.raw, kind: 'period' };
  }
  return null;
}

/** Words that join events as "either": without one, two events named are two conditions. */
const EITHER = new Set(['or', 'either', 'any', ',', '/', 'nor']);

/** Mentions that name events of the app. */
const eventMentions = (reading: Reading) =>
  reading.mentions.filter((m) => m.kind === 'target' && m.targets.some((t) => t.kind === 'event' || t.kind === 'agent'))
    .length;

/** "how many" (or "number of") and no word of money: the text asks for a count, not an amount. */
function asksCount(tokens: Token[]): boolean {
  const words = tokens.map(word);
  const count = words.some(
    (w, i) => (w === 'how' && words[i + 1] === 'many') || (w === 'number' && words[i + 1] === 'of'),
  );
  return count && !words.some((w) => MONEY.has(w) || w === '$') && !tokens.some((t) => t.kind === 'money');
}

const same = (a: unknown, b: unknown) => a !== undefined && JSON.stringify(a) === JSON.stringify(b);
/** A period is in place when a period of the reading starts or ends where it does (merged ones do one or the other). */
const samePlace = (p: Period, q: Period) => same(p.from, q.from) || same(p.to, q.to);

/** Walks every object of a reading. */
function walk(node: unknown, visit: (o: Record<string, unknown>) => void) {
  if (Array.isArray(node)) for (const x of node) walk(x, visit);
  else if (node && typeof node === 'object') {
    visit(node as Record<string, unknown>);
    for (const v of Object.values(node)) walk(v, visit);
  }
}

function baseFacts(read: unknown): Facts {
  const facts: Facts = {
    negations: 0,
    perUser: false,
    perUserAggregate: false,
    grouped: false,
    amount: false,
    signup: false,
    sequences: 0,
    either: 0,
    both: false,
    periods: [],
    events: [],
  };
  walk(read, (o) => {
    if (o.type === 'not' || o.type === 'inactive') facts.negations++;
    if (typeof o.op === 'string' && NEGATIVE_OPS.has(o.op)) facts.negations++;
    if (o.type === 'and' && Array.isArray(o.of) && o.of.length >= 2) facts.both = true;
    if (o.type === 'sequence') facts.sequences++;
    if (o.type === 'first_seen' || o.kind === 'new_users') facts.signup = true;
    if (Array.isArray(o.events) && o.events.some((e) => typeof e === 'string' && /sign|regist|join/i.test(e)))
      facts.signup = true;
    if (Array.isArray(o.events) && o.events.length >= 2) facts.either++;
    if (typeof o.label === 'string' && ('from' in o || 'to' in o)) facts.periods.push(o as unknown as Period);
    if (Array.isArray(o.events))
      for (const e of o.events) if (typeof e === 'string' && !facts.events.includes(e)) facts.events.push(e);
  });
  return facts;
}

function queryFacts(q: Query): Facts {
  const facts = baseFacts(q);
  const m = q.measure;
  facts.perUserAggregate = m.kind === 'per_user';
  facts.amount = m.kind === 'aggregate' || (m.kind === 'per_user' && m.of === 'sum');
  facts.perUser =
    facts.perUserAggregate ||
    q.groupBy?.kind === 'user' ||
    (m.kind === 'metric' && m.metric === 'arpu') ||
    (m.kind === 'ratio' && m.denominator.measure === 'users') ||
    q.having !== undefined;
  facts.grouped = !!q.groupBy || !!q.bucket || !!q.compare || m.kind === 'ratio';
  if (q.compare && q.compare.length >= 2) facts.both = true;
  return facts;
}

const conditionFacts = (c: Condition): Facts => baseFacts(c);

function teach(missing: Unplaced, reading: Reading): string {
  const w = missing.word;
  switch (missing.kind) {
    case 'sequence':
      return `Tally cannot check the order in which things happened ("${w}"): it would only count users who did both, in any order, so it will not answer that as asked.`;
    case 'negation':
      return `Tally could not tell what "${w}" applies to here, and answering without it would count the opposite.`;
    case 'per_user':
      return `Tally could not work out the figure per user that "${w}" asks for; without it the answer would be a figure over all events, not per user.`;
    case 'each':
      return `Tally could not tell what "each" splits the answer by: name it, for example "by country" or "by day".`;
    case 'both':
      return `Tally could not tell which two things "both" joins: it would otherwise count users who did either one.`;
    case 'dropped':
      return `Tally could not place "${w}" in what it would compute, and answering without it would count other users.`;
    case 'count':
      return `"${w}" asks for a count, and Tally read an amount of money instead; say which count, for example the number of events or their average per user.`;
    case 'period': {
      const all = reading.mentions.filter((m) => m.kind === 'period').map((m) => `"${m.raw}"`);
      return `This names ${all.length > 1 ? `${all.length} periods (${all.join(', ')})` : `the period ${all[0]}`} and Tally could not place ${w === all[0] ? 'it' : `"${w}"`} in the answer; ask about one period at a time, or compare them with "vs".`;
    }
  }
}

/** Rephrasings from the text's own events and periods (the service keeps those the engine answers). */
function rephrase(missing: Unplaced, reading: Reading, facts: Facts, kind: 'question' | 'criteria'): string[] {
  const names = facts.events.map((e) => nameWords(e).join(' '));
  const [a = 'purchase', b = a] = names;
  const periods = reading.mentions.filter((m) => m.kind === 'period').map((m) => m.raw);
  const p = periods[0] ? ` ${periods[0]}` : '';
  const q = periods[1] ? ` ${periods[1]}` : p;
  if (kind === 'criteria') {
    switch (missing.kind) {
      case 'sequence':
      case 'both':
        return [`users who did ${a}${p} and did ${b}${q}`, `users who did ${b}${q}`];
      case 'negation':
        return [`users who did ${a}${p} but not ${b}${q}`, `users who never did ${b}`, `users who did not do ${a}${p}`];
      default:
        return [`users who did ${a}${p}`, `users who did ${b}${q}`];
    }
  }
  switch (missing.kind) {
    case 'sequence':
    case 'both':
      return [
        `how many users did ${a} and ${b}${p}`,
        `${a} to ${b} conversion rate${p}`,
        `how many users did ${b}${q}`,
      ];
    case 'negation':
      return [
        `how many users never did ${b}`,
        `how many users did ${a} but not ${b}${p}`,
        `how many users did ${a}${p}`,
      ];
    case 'dropped':
      return [`how many users signed up${p}`, `how many users did ${a}${q}`, `new users${p}`];
    case 'count':
      return [`how many ${a} events${p}`, `${a} per user${p}`, `average number of ${a} per user${p}`];
    case 'per_user':
      return [`average revenue per user${p}`, `top 5 users by number of ${a}${p}`, `${a} per user${p}`];
    case 'each':
      return [`${a} by day${p}`, `top 5 users by number of ${a}${p}`];
    case 'period':
      return [`${a}${p} vs${q}`, `how many users did ${a}${p}`, `how many users did ${b}${q}`];
  }
}
