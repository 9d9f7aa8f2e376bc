// The first pass shared by both parsers: tokenizes the text, corrects typos against the app's
// lexicon, finds time expressions, then reads the rest as a list of mentions: phrases of the
// app's lexicon (events, property keys and values), the engine's own words (measures, metrics,
// comparisons, grouping, negation...), numbers, quoted names and leftover words.
import type { Period } from './ast.js';
import { forms, type Lexicon, type Target } from './lexicon.js';
import { NotUnderstood } from './not-understood.js';
import { findPeriods } from './period-phrases.js';
import { BUILTIN_WORDS, builtinIndex } from './roles.js';
import { type Token, tokenize } from './tokens.js';
import { FILLERS, SKIPPABLE } from './words.js';

export type Mention =
  | { kind: 'period'; period: Period; parts?: [Period, Period] }
  | { kind: 'period_error'; reason: string }
  | { kind: 'target'; targets: Target[] }
  | { kind: 'role'; role: string }
  | { kind: 'number'; value: number; money: boolean; percent: boolean; ordinal: boolean }
  | { kind: 'quoted'; text: string }
  | { kind: 'date_text'; text: string }
  | { kind: 'symbol'; text: string }
  | { kind: 'word'; word: string };

export type Tagged = Mention & {
  /** Token span [start, end). */
  start: number;
  end: number;
  /** The text as written. */
  raw: string;
  used?: boolean;
  /** Written in quotes. */
  quoted?: boolean;
};

/** Longer texts are refused: a question or criteria is a sentence or two. */
const MAX_TOKENS = 120;

export interface Reading {
  tokens: Token[];
  mentions: Tagged[];
  /** Words read as others: [written, read as]. */
  corrections: [string, string][];
  today: string;
}

const tokenText = (t: Token | undefined) => (t && (t.kind === 'word' || t.kind === 'symbol') ? t.text : '');

/** Reads a text into mentions. */
export function read(source: string, lexicon: Lexicon, today: string, now: Date): Reading {
  const tokens = tokenize(source);
  if (tokens.length > MAX_TOKENS) {
    throw new NotUnderstood(
      `That is ${tokens.length} words long: ask one thing at a time, in at most ${MAX_TOKENS} words.`,
    );
  }
  const corrections = correctTypos(tokens, lexicon);
  const mentions: Tagged[] = [];
  const raw = (a: number, b: number) => source.slice(tokens[a]!.start, tokens[Math.min(b, tokens.length) - 1]!.end);
  const periods = findPeriods(tokens, source, today, now);
  const periodAt = new Map(periods.map((p) => [p.start, p]));
  for (let i = 0; i < tokens.length; ) {
    const p = periodAt.get(i);
    if (p) {
      mentions.push({
        ...(p.period
          ? { kind: 'period', period: p.period, ...(p.parts ? { parts: p.parts } : {}) }
          : { kind: 'period_error', reason: p.error ?? 'not a period' }),
        start: p.start,
        end: p.end,
        raw: raw(p.start, p.end),
      } as Tagged);
      i = p.end;
      continue;
    }
    const t = tokens[i]!;
    if (t.kind === 'quoted') {
      const targets = lexicon.quoted(t.raw);
      if (targets.length > 0)
        mentions.push({ kind: 'target', targets, start: i, end: i + 1, raw: t.raw, quoted: true });
      else mentions.push({ kind: 'quoted', text: t.raw, start: i, end: i + 1, raw: t.raw });
      i++;
      continue;
    }
    if (t.kind === 'number' || t.kind === 'money' || t.kind === 'percent') {
      const money =
        t.kind === 'money' ||
        ['dollars', 'dollar', 'usd', 'bucks', 'euros', 'euro', 'eur'].includes(tokenText(tokens[i + 1]));
      const percent = t.kind === 'percent' || ['percent', '%'].includes(tokenText(tokens[i + 1]));
      const span = t.kind === 'number' && (money || percent) ? 2 : 1;
      mentions.push({
        kind: 'number',
        value: t.value!,
        money,
        percent,
        ordinal: !!t.ordinal,
        start: i,
        end: i + span,
        raw: raw(i, i + span),
      });
      i += span;
      continue;
    }
    if (t.kind === 'date') {
      mentions.push({ kind: 'date_text', text: t.raw, start: i, end: i + 1, raw: t.raw });
      i++;
      continue;
    }
    const lex = matchLexicon(tokens, i, lexicon, periodAt);
    const builtin = matchBuiltin(tokens, i, periodAt);
    if (lex && (!builtin || lex.end > builtin.end || (lex.end === builtin.end && !builtin.strong))) {
      mentions.push({ kind: 'target', targets: lex.targets, start: i, end: lex.end, raw: raw(i, lex.end) });
      i = lex.end;
      continue;
    }
    if (builtin) {
      mentions.push({ kind: 'role', role: builtin.role, start: i, end: builtin.end, raw: raw(i, builtin.end) });
      i = builtin.end;
      continue;
    }
    if (t.kind === 'symbol') mentions.push({ kind: 'symbol', text: t.text, start: i, end: i + 1, raw: t.raw });
    else mentions.push({ kind: 'word', word: t.text, start: i, end: i + 1, raw: t.raw });
    i++;
  }
  return { tokens, mentions, corrections, today };
}

/** Reads unknown words as the closest word of the app or of the engine (at most 10 tries). */
function correctTypos(tokens: Token[], lexicon: Lexicon): [string, string][] {
  const corrections: [string, string][] = [];
  let attempts = 0;
  for (const t of tokens) {
    if (attempts >= 10) break;
    if (t.kind !== 'word' || FILLERS.has(t.text) || builtinIndex.has(t.text) || lexicon.knows(t.text)) continue;
    if (/^\d/.test(t.text)) continue;
    attempts++;
    const fixed = lexicon.correct(t.text, BUILTIN_WORDS);
    if (fixed && fixed !== t.text) {
      corrections.push([t.raw, fixed]);
      t.text = fixed;
    }
  }
  return corrections;
}

function matchBuiltin(
  tokens: Token[],
  i: number,
  periods: Map<number, unknown>,
): { role: string; end: number; strong: boolean } | null {
  let best: { role: string; end: number; strong: boolean } | null = null;
  for (const e of builtinIndex.get(tokenText(tokens[i])) ?? []) {
    let k = 0;
    while (
      k < e.words.length &&
      i + k < tokens.length &&
      tokenText(tokens[i + k]) === e.words[k] &&
      (k === 0 || !periods.has(i + k))
    )
      k++;
    if (k === e.words.length && (!best || i + k > best.end)) best = { role: e.role, end: i + k, strong: e.strong };
  }
  return best;
}

function matchLexicon(
  tokens: Token[],
  i: number,
  lexicon: Lexicon,
  periods: Map<number, unknown>,
): { targets: Target[]; end: number } | null {
  const t = tokens[i]!;
  if (t.kind !== 'word' && t.kind !== 'quoted') return null;
  const first = t.kind === 'quoted' ? t.text : t.text;
  const candidates = new Set(forms(first).flatMap((f) => lexicon.entriesFor(f)));
  let bestEnd = -1;
  let bestRank = Number.POSITIVE_INFINITY;
  let targets: Target[] = [];
  for (const e of candidates) {
    if (e.exact && t.raw !== e.exact) continue;
    let k = i;
    let ok = true;
    for (let w = 0; w < e.words.length; w++) {
      if (w > 0) {
        let gaps = 0;
        while (
          k < tokens.length &&
          gaps < 2 &&
          SKIPPABLE.has(tokenText(tokens[k])) &&
          !matches(tokens[k]!, e.words[w]!)
        ) {
          k++;
          gaps++;
        }
      }
      const tok = tokens[k];
      if (!tok || (w > 0 && periods.has(k)) || !matches(tok, e.words[w]!)) {
        ok = false;
        break;
      }
      k++;
    }
    if (!ok) continue;
    if (k > bestEnd || (k === bestEnd && e.rank < bestRank)) {
      bestEnd = k;
      bestRank = e.rank;
      targets = [e.target];
    } else if (
      k === bestEnd &&
      e.rank === bestRank &&
      !targets.some((x) => JSON.stringify(x) === JSON.stringify(e.target))
    ) {
      targets.push(e.target);
    }
  }
  return bestEnd > i ? { targets, end: bestEnd } : null;
}

function matches(t: Token, words: Set<string>): boolean {
  if (t.kind !== 'word' && t.kind !== 'quoted' && t.kind !== 'number') return false;
  return forms(t.text).some((f) => words.has(f));
}
