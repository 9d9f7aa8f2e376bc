// The natural-language engine, one for analytics questions and audience criteria: reads text in
// the app's own vocabulary (lexicon.ts) into the typed AST (ast.ts), or refuses, naming the words
// it could not place and suggesting the app's closest events and properties and a rephrasing that
// works. No SQL here: language/queries/compile.ts compiles the AST.

import { parseQuestion } from './analytics.js';
import type { Condition, Query } from './ast.js';
import { applyCompareBefore, checkCompare, dropTrendWords, readCompareBefore } from './compare-before.js';
import { parseCriteria } from './criteria.js';
import { guardMeaning } from './guard.js';
import { type Lexicon, nameWords } from './lexicon.js';
import { read } from './mentions.js';
import { refuseNamedRates } from './named-rates.js';
import { NotUnderstood } from './not-understood.js';
import { applySequence, readSequence } from './sequence.js';
import { applyTimeParts, readTimeParts } from './time-parts.js';

export type { Condition, Query, Segment } from './ast.js';
export { describeCondition, describeQuery, describeUsers } from './describe.js';
export { Lexicon, type LexiconData } from './lexicon.js';
export { describePeriod } from './periods.js';
export {
  audienceSqlCount,
  audienceSqlMembers,
  type CompiledSql,
  compileQuery,
  compileSegmentCount,
  compileSegmentMembers,
} from './queries/compile.js';
export { activeUsersSeries } from './queries/compile-rollup.js';
export { NotUnderstood };

export interface Clock {
  /** Local date of `now` in the organization's time zone. */
  today: string;
  now: Date;
}

export interface Understood<T> {
  ast: T;
  /** Misspelt words read as others: [written, read as]. */
  corrections: [string, string][];
}

/** The app's signup event, for sequences that start with signing up. */
const signupEvent = (lexicon: Lexicon) =>
  lexicon.events.find((e) => /^(sign_?up|signed_?up|user_?signed_?up|registration|registered)$/i.test(e.name))?.name;

/** Reads an analytics question; throws NotUnderstood. */
export function understandQuestion(text: string, lexicon: Lexicon, clock: Clock): Understood<Query> {
  refuseNamedRates(text, lexicon);
  // hours and weekdays ("on weekends", "by hour of day") first, then the rest as usual
  const timed = readTimeParts(text);
  // "vs the 14 days before": one period, compared with the one before it
  const before = readCompareBefore(timed?.text ?? text);
  const plain = before?.text ?? dropTrendWords(timed?.text ?? text);
  // an order of events ("then", "went on to", "within 7 days of signing up") is read as "and", then placed
  const ordered = readSequence(plain, signupEvent(lexicon));
  const reading = read(ordered?.text ?? plain, lexicon, clock.today, clock.now);
  const parsed = parseQuestion(reading, lexicon);
  let ast = ordered ? applySequence(parsed, ordered.seq) : parsed;
  guardMeaning(reading, ast, 'question');
  if (before) ast = applyCompareBefore(ast, before.words);
  checkCompare(ast);
  return { ast: timed ? applyTimeParts(ast, timed.parts) : ast, corrections: reading.corrections };
}

/**
 * The guard of understandQuestion/understandCriteria for a reading filled by a language model:
 * throws NotUnderstood when a word that changes the meaning of `text` does not show in `ast`.
 */
export function checkMeaning(
  text: string,
  ast: Query | Condition,
  lexicon: Lexicon,
  clock: Clock,
  kind: 'question' | 'criteria',
): void {
  guardMeaning(read(text, lexicon, clock.today, clock.now), ast, kind);
}

/** Reads audience criteria; throws NotUnderstood. */
export function understandCriteria(text: string, lexicon: Lexicon, clock: Clock): Understood<Condition> {
  const timed = readTimeParts(text);
  if (timed)
    throw new NotUnderstood(
      `Audience criteria do not take hours or days of the week yet (${timed.parts.phrases.map((p) => `"${p.trim()}"`).join(', ')}): use a period such as "in the last 7 days".`,
      timed.parts.phrases.map((p) => p.trim()),
    );
  const ordered = readSequence(text, signupEvent(lexicon));
  const reading = read(ordered?.text ?? text, lexicon, clock.today, clock.now);
  const parsed = parseCriteria(reading, lexicon);
  const ast = ordered ? applySequence(parsed, ordered.seq) : parsed;
  guardMeaning(reading, ast, 'criteria');
  return { ast, corrections: reading.corrections };
}

export interface Suggestions {
  /** The app's events closest to the words not understood (or its busiest ones). */
  events: string[];
  /** The app's property keys closest to them (or its most common ones). */
  properties: string[];
  /** Rephrasings of the text that the engine understands. */
  rephrasings: string[];
}

/** What to suggest after a refusal: close names, and rephrasings that parse. */
export function suggest(
  text: string,
  error: NotUnderstood,
  lexicon: Lexicon,
  clock: Clock,
  kind: 'question' | 'criteria',
): Suggestions {
  const eventNames = new Set(lexicon.events.map((e) => e.name));
  const keys = new Set(lexicon.keys());
  const unknown = error.unknown.slice(0, 5);
  const near = unknown.flatMap((w) => lexicon.closest(w, 4));
  const events = [...new Set(near.filter((n) => eventNames.has(n)))];
  const properties = [...new Set(near.filter((n) => keys.has(n)))];
  for (const e of lexicon.events) if (events.length < 3 && !events.includes(e.name)) events.push(e.name);
  for (const k of lexicon.keys()) if (properties.length < 3 && !properties.includes(k)) properties.push(k);
  const parses = (t: string) => {
    if (t.length > 500) return false;
    try {
      if (kind === 'question') understandQuestion(t, lexicon, clock);
      else understandCriteria(t, lexicon, clock);
      return true;
    } catch {
      return false;
    }
  };
  const rephrasings: string[] = [];
  for (const candidate of error.rephrasings)
    if (rephrasings.length < 3 && !rephrasings.includes(candidate) && parses(candidate)) rephrasings.push(candidate);
  for (const word of error.rephrasings.length > 0 ? [] : unknown) {
    if (!word || !text.includes(word)) continue;
    for (const n of lexicon.closest(word, 3)) {
      const candidate = text.replace(word, nameWords(n).join(' '));
      if (candidate !== text && !rephrasings.includes(candidate) && parses(candidate)) rephrasings.push(candidate);
    }
  }
  for (const ex of examples(lexicon, kind))
    if (rephrasings.length < 3 && !rephrasings.includes(ex) && parses(ex)) rephrasings.push(ex);
  return { events: events.slice(0, 5), properties: properties.slice(0, 5), rephrasings: rephrasings.slice(0, 3) };
}

/** Phrasings that work on this app, built from its own events and properties. */
export function examples(lexicon: Lexicon, kind: 'question' | 'criteria'): string[] {
  const top = lexicon.events[0]?.name;
  const second = lexicon.events[1]?.name ?? top;
  const words = (n: string | undefined) => (n ? nameWords(n).join(' ') : 'events');
  const withValues = [...lexicon.allProperties()].find((p) => p.text && p.values.length > 1 && p.values.length <= 20);
  const userProp = [...lexicon.userProperties.values()].find(
    (p) => p.text && p.values.length > 1 && p.values.length <= 20,
  );
  if (kind === 'criteria') {
    return [
      `users who did ${words(top)} at least 3 times in the last 30 days`,
      `users who have not been active for 14 days`,
      ...(userProp ? [`users whose ${userProp.key} is ${userProp.values[0]!.value}`] : []),
      `users who signed up this week`,
      `users who did ${words(second)} but not ${words(top)} in the last 7 days`,
      'users who have an email',
    ];
  }
  return [
    `how many ${words(top)} events in the last 7 days`,
    'unique users per day for the last 30 days',
    ...(withValues ? [`${words(top)} by ${withValues.key} last month`] : []),
    ...(lexicon.moneyKey ? ['total revenue by week this month', 'average revenue per user last month'] : []),
    `top 5 events yesterday`,
    'DAU last week',
    `${words(second)} this week vs last week`,
  ];
}
