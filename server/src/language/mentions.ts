// The first pass shared by both parsers: tokenizes the text, corrects typos against the app's
// lexicon, finds time expressions, then reads the rest as a list of mentions: phrases of the
// app's lexicon (events, property keys and values), the engine's own words (measures, metrics,
// comparisons, grouping, negation...), numbers, quoted names and leftover words.
import type { Period } from './ast.js';
import { NotUnderstood } from './clause.js';
import { forms, type Lexicon, type Target } from './lexicon.js';
import { findPeriods } from './periods.js';
import { type Token, tokenize } from './tokens.js';
import { FILLERS, MONEY_WORDS, SKIPPABLE } from './words.js';

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

/** The engine's own vocabulary: phrase -> role. Longer phrases win; `!` marks strong roles. */
const BUILTIN: [string, string][] = [
  // metrics of GET /v1/analytics/metrics
  ...[
    'dau',
    'daus',
    'daily active users',
    'daily active user',
    'daily actives',
    'daily active',
    'daily users',
    'daily uniques',
    'daily unique users',
  ].map((p) => [p, '!metric:dau'] as [string, string]),
  ...['wau', 'weekly active users', 'weekly actives', 'weekly active', 'weekly users'].map(
    (p) => [p, '!metric:wau'] as [string, string],
  ),
  ...[
    'mau',
    'maus',
    'monthly active users',
    'monthly actives',
    'monthly active',
    'monthly users',
    'monthly uniques',
  ].map((p) => [p, '!metric:mau'] as [string, string]),
  ...['retention', 'retention rate', 'retention rates'].map((p) => [p, '!metric:retention'] as [string, string]),
  ...['churn', 'churn rate', 'attrition'].map((p) => [p, '!metric:churn'] as [string, string]),
  ...['conversion', 'conversion rate', 'conversions', 'conversion rates', 'convert', 'converted'].map(
    (p) => [p, '!metric:conversion'] as [string, string],
  ),
  ...[
    'arpu',
    'average revenue per user',
    'avg revenue per user',
    'revenue per user',
    'average revenue per active user',
    'mean revenue per user',
  ].map((p) => [p, '!metric:arpu'] as [string, string]),
  ...[
    'arppu',
    'average revenue per paying user',
    'revenue per paying user',
    'average revenue per buyer',
    'revenue per buyer',
    'average revenue per paying customer',
    'revenue per paying customer',
    'average revenue per customer',
  ].map((p) => [p, '!arppu'] as [string, string]),
  ...[
    'aov',
    'average order value',
    'avg order value',
    'average order size',
    'average basket',
    'average basket size',
    'average basket value',
    'average purchase value',
    'average purchase amount',
    'average order amount',
    'average order',
    'average sale',
    'average ticket',
    'average transaction value',
    'average cart value',
    'mean order value',
    'typical order value',
  ].map((p) => [p, '!aov'] as [string, string]),
  ['stickiness', '!unsupported'],
  ['bounce rate', '!unsupported'],
  ['bounce', '!unsupported'],
  ['ltv', '!unsupported'],
  ['lifetime value', '!unsupported'],
  ['nps', '!unsupported'],
  ['cac', '!unsupported'],
  ['session duration', '!unsupported'],
  ['session length', '!unsupported'],
  ['time spent', '!unsupported'],
  // counting
  ['how many', '!count'],
  ['how many times', '!count_events'],
  ['how often', '!count_events'],
  ['number of times', '!count_events'],
  ['how much', '!how_much'],
  ['number of', '!count'],
  ['no . of', '!count'],
  ['nb of', '!count'],
  ['# of', '!count'],
  ['#', 'count'],
  ['count', 'count'],
  ['count of', 'count'],
  ['counts', 'count'],
  ['total number of', '!count'],
  ['total count of', '!count'],
  ['total count', '!count'],
  ['volume of', 'count'],
  ['volume', 'count'],
  ['amount of', 'count'],
  ['frequency', 'count'],
  // aggregates
  ['total', 'agg:sum'],
  ['sum', 'agg:sum'],
  ['sum of', 'agg:sum'],
  ['in total', 'in_total'],
  ['worth', '!in_total'],
  ['worth of', '!in_total'],
  ['average', 'agg:avg'],
  ['avg', 'agg:avg'],
  ['mean', 'agg:avg'],
  ['typical', 'agg:avg'],
  ['on average', '!agg:avg'],
  ['median', 'agg:median'],
  ['max', 'agg:max'],
  ['maximum', 'agg:max'],
  ['highest', 'agg:max'],
  ['largest', 'agg:max'],
  ['biggest', 'agg:max'],
  ['most expensive', 'agg:max'],
  ['priciest', 'agg:max'],
  ['min', 'agg:min'],
  ['minimum', 'agg:min'],
  ['lowest', 'agg:min'],
  ['smallest', 'agg:min'],
  ['cheapest', 'agg:min'],
  ['least expensive', 'agg:min'],
  // people
  ...[
    'users',
    'user',
    'people',
    'person',
    'persons',
    'customers',
    'customer',
    'members',
    'member',
    'accounts',
    'account',
    'players',
    'player',
    'clients',
    'client',
    'shoppers',
    'shopper',
    'folks',
    'uniques',
    'everyone',
    'everybody',
    'anyone',
    'anybody',
    'individuals',
  ].map((p) => [p, 'users'] as [string, string]),
  ...['visitors', 'visitor', 'unique visitors', 'unique visits'].map((p) => [p, 'visitors'] as [string, string]),
  ['unique', 'unique'],
  ['distinct', 'unique'],
  ['different', 'unique'],
  ['individual', 'unique'],
  ['active', 'active'],
  ['inactive', '!inactive'],
  ['dormant', '!inactive'],
  ['paying', 'paying'],
  ['new users', '!new_users'],
  ['new user', '!new_users'],
  ['new customers', '!new_users'],
  ['new people', '!new_users'],
  ['new accounts', '!new_users'],
  ['new visitors', '!new_users'],
  ['new', 'new'],
  ['signed up', '!first_seen'],
  ['sign up', '!first_seen'],
  ['signing up', '!first_seen'],
  ['joined', '!first_seen'],
  ['registered', '!first_seen'],
  ['first seen', '!first_seen'],
  ['last seen', '!last_seen'],
  ['last active', '!last_seen'],
  ['last activity', '!last_seen'],
  ['were created', '!first_seen'],
  ['was created', '!first_seen'],
  ['created', 'first_seen'],
  ['created an account', '!first_seen'],
  ['started using', '!first_seen'],
  ['started', 'first_seen'],
  ['acquired', '!first_seen'],
  ['onboarded', '!first_seen'],
  // grouping and series
  ['by', 'by'],
  ['per', 'per'],
  ['for each', '!group'],
  ['for every', '!group'],
  ['each', 'each'],
  ['across', 'group'],
  ['broken down by', '!group'],
  ['break down by', '!group'],
  ['breakdown by', '!group'],
  ['breakdown of', '!breakdown'],
  ['breakdown', '!breakdown'],
  ['split by', '!group'],
  ['split', 'breakdown'],
  ['grouped by', '!group'],
  ['group by', '!group'],
  ['segmented by', '!group'],
  ['distribution of', '!breakdown'],
  ['distribution', '!breakdown'],
  ['hourly', '!bucket:hour'],
  ['daily', 'bucket:day'],
  ['weekly', 'bucket:week'],
  ['monthly', 'bucket:month'],
  ['day by day', '!bucket:day'],
  ['week by week', '!bucket:week'],
  ['month by month', '!bucket:month'],
  ['over time', '!bucket:auto'],
  ['trend', '!bucket:auto'],
  ['trends', '!bucket:auto'],
  ['time series', '!bucket:auto'],
  ['evolution', '!bucket:auto'],
  // order
  ['top', 'top'],
  ['bottom', 'bottom'],
  ['most', 'most'],
  ['the most', 'most'],
  ['least', 'least'],
  ['the least', 'least'],
  ['fewest', 'least'],
  ['the fewest', 'least'],
  ['best', 'most'],
  ['worst', 'least'],
  ['most popular', '!most'],
  ['least popular', '!least'],
  ['popular', 'popular'],
  ['most common', '!most'],
  ['least common', '!least'],
  ['most frequent', '!most'],
  ['least frequent', '!least'],
  ['most active', '!most_active'],
  ['least active', '!least_active'],
  ['best selling', '!best_selling'],
  ['best seller', '!best_selling'],
  ['bestseller', '!best_selling'],
  ['bestselling', '!best_selling'],
  ['top selling', '!best_selling'],
  ['worst selling', '!worst_selling'],
  ['busiest', '!busiest'],
  ['quietest', '!quietest'],
  ['slowest', '!quietest'],
  ['rank', 'rank'],
  ['ranked', 'rank'],
  ['ranking', 'rank'],
  // comparisons of numbers
  ['more than', '!cmp:gt'],
  ['over', 'cmp:gt'],
  ['above', '!cmp:gt'],
  ['greater than', '!cmp:gt'],
  ['higher than', '!cmp:gt'],
  ['larger than', '!cmp:gt'],
  ['bigger than', '!cmp:gt'],
  ['exceeding', '!cmp:gt'],
  ['in excess of', '!cmp:gt'],
  ['at least', '!cmp:gte'],
  ['no less than', '!cmp:gte'],
  ['no fewer than', '!cmp:gte'],
  ['minimum of', '!cmp:gte'],
  ['a minimum of', '!cmp:gte'],
  ['less than', '!cmp:lt'],
  ['fewer than', '!cmp:lt'],
  ['under', 'cmp:lt'],
  ['below', '!cmp:lt'],
  ['lower than', '!cmp:lt'],
  ['smaller than', '!cmp:lt'],
  ['at most', '!cmp:lte'],
  ['no more than', '!cmp:lte'],
  ['a maximum of', '!cmp:lte'],
  ['maximum of', '!cmp:lte'],
  ['exactly', '!cmp:eq'],
  ['equal to', '!cmp:eq'],
  ['equals', '!cmp:eq'],
  ['between', 'between'],
  ['or more', '!or_more'],
  ['or over', '!or_more'],
  ['or above', '!or_more'],
  ['or less', '!or_less'],
  ['or fewer', '!or_less'],
  ['or under', '!or_less'],
  ['times', '!times'],
  ['time', 'times'],
  ['x', 'times'],
  ['once', '!once'],
  ['twice', '!twice'],
  ['thrice', '!thrice'],
  // negation
  ['not', '!not'],
  ['no', '!not'],
  ['non', '!not'],
  ['never', '!never'],
  ['without', '!without'],
  ['except', '!not'],
  ['except for', '!not'],
  ['excluding', '!not'],
  ['exclude', '!not'],
  ['other than', '!not'],
  ['outside', '!not'],
  ['outside of', '!not'],
  ['apart from', '!not'],
  ['none', '!not'],
  ['nothing', '!not'],
  ['zero', '!zero'],
  // connectors
  ['and', 'and'],
  ['or', 'or'],
  ['but', 'but'],
  ['as well as', 'and'],
  ['plus', 'and'],
  ['vs', '!vs'],
  ['v', 'vs'],
  ['versus', '!vs'],
  ['compared to', '!vs'],
  ['compared with', '!vs'],
  ['compare', '!vs'],
  ['comparison', 'vs'],
  ['against', 'vs'],
  ['relative to', '!vs'],
  ['change', 'change'],
  ['changed', 'change'],
  ['difference', 'change'],
  ['grow', 'change'],
  ['grew', 'change'],
  ['growth', 'change'],
  ['week over week', '!wow'],
  ['wow', '!wow'],
  ['month over month', '!mom'],
  ['mom', '!mom'],
  // ratios
  ['rate', 'rate'],
  ['ratio', 'ratio'],
  ['percent', 'percent'],
  ['percentage', 'percent'],
  ['%', 'percent'],
  ['pct', 'percent'],
  ['share', 'percent'],
  ['proportion', 'percent'],
  ['fraction', 'percent'],
  ['portion', 'percent'],
  ['out of', 'out_of'],
  ['to', 'to'],
  ['into', 'to'],
  // clauses
  ['who', 'rel'],
  ['that', 'rel'],
  ['which', 'which'],
  ['whose', 'whose'],
  ['where', 'where'],
  ['with', 'with'],
  ['having', 'with'],
  ['have', 'have'],
  ['has', 'have'],
  ['had', 'have'],
  ['is', 'is'],
  ['are', 'is'],
  ['was', 'is'],
  ['were', 'is'],
  ['is not', '!is_not'],
  ['are not', '!is_not'],
  ['contains', '!op:contains'],
  ['contain', '!op:contains'],
  ['includes', '!op:contains'],
  ['include', '!op:contains'],
  ['starts with', '!op:starts_with'],
  ['start with', '!op:starts_with'],
  ['begins with', '!op:starts_with'],
  ['ends with', '!op:ends_with'],
  ['end with', '!op:ends_with'],
  ['one of', '!one_of'],
  ['exists', '!op:exists'],
  ['exist', '!op:exists'],
  ['is set', '!op:exists'],
  ['is not set', '!op:not_exists'],
  ['is missing', '!op:not_exists'],
  ['is unknown', '!op:not_exists'],
  ['is empty', '!op:not_exists'],
  ['is known', '!op:exists'],
  ['is present', '!op:exists'],
  ['does not exist', '!op:not_exists'],
  ['all users', '!all'],
  ['all time', '!all_time'],
  ['of all time', '!all_time'],
  ['ever', 'all_time'],
  ['so far', 'all_time'],
  ['to date', 'all_time'],
  ['in total', 'all_time'],
  ['overall', 'all_time'],
  ['recently', '!vague_time'],
  ['recent', 'vague_time'],
  ['lately', '!vague_time'],
  ['event', 'event_word'],
  ['events', 'event_word'],
  ['event name', '!event_name'],
  ['event names', '!event_name'],
  ['event type', '!event_name'],
  ['event types', '!event_name'],
  ['type of event', '!event_name'],
  ['types of events', '!event_name'],
  ['kind of event', '!event_name'],
  ['type', 'type_word'],
  ['types', 'type_word'],
  ['actions', 'event_word'],
  ['action', 'event_word'],
  ['activity', 'event_word'],
  ['activities', 'event_word'],
  ['day', 'unit:day'],
  ['days', 'unit:day'],
  ['date', 'unit:day'],
  ['week', 'unit:week'],
  ['weeks', 'unit:week'],
  ['month', 'unit:month'],
  ['months', 'unit:month'],
  ['hour', 'unit:hour'],
  ['hours', 'unit:hour'],
  ['predict', '!unsupported'],
  ['forecast', '!unsupported'],
  ['projection', '!unsupported'],
  ['why', '!unsupported'],
  ['will', 'will'],
  ['going to', 'will'],
  ['delete', '!unsupported'],
  ['remove', '!unsupported'],
  ['update', '!unsupported'],
  ['drop', '!unsupported'],
  ['spender', '!spender'],
  ['spenders', '!spender'],
  ...[...MONEY_WORDS].map((w) => [w, w === 'sales' ? '!sales' : '!money'] as [string, string]),
  ...[
    'median order value',
    'median order',
    'median purchase',
    'median purchase value',
    'median purchase amount',
    'median basket',
    'median order amount',
  ].map((p) => [p, '!aov_median'] as [string, string]),
  ['day', 'unit:day'],
];

interface BuiltinEntry {
  words: string[];
  role: string;
  strong: boolean;
}

const builtinIndex = new Map<string, BuiltinEntry[]>();
for (const [phrase, role] of BUILTIN) {
  const words = phrase.split(' ');
  const entry = { words, role: role.replace(/^!/, ''), strong: role.startsWith('!') };
  const list = builtinIndex.get(words[0]!) ?? [];
  list.push(entry);
  builtinIndex.set(words[0]!, list);
}

/** Words the engine itself knows (besides fillers), as candidates for typo correction. */
export const BUILTIN_WORDS = [...new Set(BUILTIN.flatMap(([p]) => p.split(' ')).filter((w) => /^[a-z]{4,}$/.test(w)))];

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
