// Parses a question in the controlled language (docs/analytics.md) into a query AST. Each part of
// the language is recognised by one pattern and cut out of the question: time range, "users with
// more than N events", "top N", grouping, "where" filters, the measure, and event names from the
// app's event dictionary. Whatever is left must be filler words, otherwise the question is not
// understood (null) rather than guessed at.
import { addDays, addUnits, isCalendarDate, truncate } from '../time.js';
import type { Comparison, Filter, Grouping, Measure, NlQuery, TimeRange, UserThreshold } from './ast.js';

export interface Lexicon {
  /** Event names of the app. */
  events: string[];
  /** Property keys seen on the app's events. */
  properties: string[];
}

const FILLERS = new Set(
  (
    "show me give list get find tell what what's whats which is are was were the a an of for in on at during over " +
    'within total number count counts how many much did do does done have has had made make performed triggered ' +
    'happened occurred there events event all by per with and or please times time that who to each every ' +
    'value values name names i want see volume amount overall ever so far having'
  ).split(' '),
);

const COMPARISONS: Record<string, Comparison> = {
  'more than': '>',
  over: '>',
  'greater than': '>',
  'is more than': '>',
  'is greater than': '>',
  'at least': '>=',
  'is at least': '>=',
  'fewer than': '<',
  'less than': '<',
  under: '<',
  'is less than': '<',
  'at most': '<=',
  'is at most': '<=',
  exactly: '=',
  is: '=',
  equals: '=',
  '=': '=',
  'is not': '!=',
  "isn't": '!=',
  '!=': '!=',
  '<>': '!=',
  '>': '>',
  '<': '<',
  '>=': '>=',
  '<=': '<=',
};

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

class Text {
  constructor(public s: string) {}
  take(re: RegExp): RegExpExecArray | null {
    const m = re.exec(this.s);
    if (m) this.s = `${this.s.slice(0, m.index)} ${this.s.slice(m.index + m[0].length)}`;
    return m;
  }
}

export function parseQuestion(question: string, lexicon: Lexicon, today: string): NlQuery | null {
  const text = new Text(` ${question.trim().replace(/[?!.;]+$/, '')} `);
  const property = (word: string | undefined): string | null => {
    if (!word) return null;
    const w = word.toLowerCase();
    const props = new Set(lexicon.properties.map((p) => p.toLowerCase()));
    const candidates = [w, w.replace(/ies$/, 'y'), w.replace(/es$/, ''), w.replace(/s$/, '')];
    const hit = candidates.find((c) => props.has(c));
    return hit === undefined ? null : (lexicon.properties.find((p) => p.toLowerCase() === hit) ?? null);
  };

  const range = parseRange(text, today);
  if (range === 'invalid') return null;

  let users: UserThreshold | null = null;
  const threshold = text.take(
    /\b(how many |number of |count (?:of |the )?)?users\s+((?:(?!\bwhere\b)[^,])*?)\b(more than|over|at least|fewer than|less than|under|at most|exactly)\s+(\d+)\b/i,
  );
  if (threshold) {
    users = { op: COMPARISONS[threshold[3]!.toLowerCase()]!, n: Number(threshold[4]), countOnly: !!threshold[1] };
    text.s += ` ${threshold[2]} `;
  }

  let top: number | null = null;
  let groupBy: Grouping | null = null;
  let measure: Measure | null = null;
  const topMatch = text.take(
    /\b(?:the\s+)?(?:top\s+(\d+)|(\d+)\s+most\s+(?:common|popular|frequent|active)|most\s+(?:common|popular|frequent|active))\s+([a-z_]+)(?:\s+(?:names?|values?|types?))?(?:\s+by\s+(unique users|distinct users|active users|users|events|event count|count|volume|number of events|(?:total|sum of|average|avg|mean)\s+[a-z_]+|[a-z_]+))?/i,
  );
  if (topMatch) {
    top = Number(topMatch[1] ?? topMatch[2] ?? 10);
    const subject = topMatch[3]!.toLowerCase();
    if (subject === 'events' || subject === 'event') groupBy = { kind: 'event' };
    else if (subject === 'users' || subject === 'user') groupBy = { kind: 'user' };
    else {
      const p = property(subject);
      if (!p) return null;
      groupBy = { kind: 'property', property: p };
    }
    const by = topMatch[4]?.toLowerCase();
    if (by) {
      if (/users$/.test(by)) measure = { kind: 'users' };
      else if (/^(events|event count|count|volume|number of events)$/.test(by)) measure = { kind: 'count' };
      else {
        const m = /^(?:(total|sum of|average|avg|mean)\s+)?([a-z_]+)$/.exec(by)!;
        const p = property(m[2]);
        if (!p) return null;
        measure = { kind: m[1] && /^(average|avg|mean)$/.test(m[1]) ? 'avg' : 'sum', property: p };
      }
    }
  }

  if (!groupBy) groupBy = parseGrouping(text, property);

  const filters: Filter[] = [];
  const where = text.take(/\bwhere\s+(.+?)\s*$/i);
  if (where) {
    for (const part of where[1]!.split(/\s+and\s+/i)) {
      const m =
        /^(?:the\s+)?([a-z_][\w]*)\s+(is\s+not|isn't|is\s+greater\s+than|is\s+more\s+than|is\s+less\s+than|is\s+at\s+least|is\s+at\s+most|greater\s+than|more\s+than|less\s+than|at\s+least|at\s+most|is|equals|!=|<>|>=|<=|=|>|<)\s+("[^"]*"|'[^']*'|\S+)$/i.exec(
          part.trim(),
        );
      if (!m) return null;
      const value = m[3]!.replace(/^["'](.*)["']$/, '$1');
      filters.push({ property: m[1]!, op: COMPARISONS[m[2]!.toLowerCase().replace(/\s+/g, ' ')]!, value });
    }
  }

  if (!measure) {
    const parsed = parseMeasure(text, property);
    if (parsed === 'invalid') return null;
    measure = parsed;
  }

  const events: string[] = [];
  const byLength = [...lexicon.events].sort((a, b) => b.length - a.length || (a < b ? -1 : 1));
  for (const name of byLength) {
    const pattern = escapeRegExp(name).replace(/_/g, '[ _]');
    const re = new RegExp(`(?<![\\w])(?:"${pattern}"|${pattern}(?:e?s)?)(?![\\w])`, 'i');
    while (text.take(re)) if (!events.includes(name)) events.push(name);
  }
  const named = text.take(/\bevents?\s+(?:named|called)\s+("[^"]+"|'[^']+'|\S+)/i);
  if (named) events.push(named[1]!.replace(/^["'](.*)["']$/, '$1'));

  const leftover = text.s
    .toLowerCase()
    .split(/[\s,]+/)
    .filter((w) => w !== '' && !FILLERS.has(w));
  if (leftover.length > 0) return null;

  const m: Measure = measure;
  if (
    m.kind === 'new_users' &&
    (events.length > 0 || filters.length > 0 || (groupBy && groupBy.kind !== 'time') || users)
  ) {
    return null;
  }
  if (users && (groupBy || top || m.kind !== 'count')) return null;
  return { measure: m, events, filters, range, groupBy, top, users };
}

function parseRange(text: Text, today: string): TimeRange | null | 'invalid' {
  const days = (from: string, to: string): TimeRange => ({ kind: 'days', from, to });
  let m = text.take(/\b(?:between|from)\s+(\d{4}-\d{2}-\d{2})\s+(?:and|to|until)\s+(\d{4}-\d{2}-\d{2})\b/i);
  if (m) {
    if (!isCalendarDate(m[1]!) || !isCalendarDate(m[2]!) || m[2]! < m[1]!) return 'invalid';
    return days(m[1]!, m[2]!);
  }
  m = text.take(/\bsince\s+(\d{4}-\d{2}-\d{2})\b/i);
  if (m) return isCalendarDate(m[1]!) ? days(m[1]!, today) : 'invalid';
  m = text.take(/\bon\s+(\d{4}-\d{2}-\d{2})\b/i);
  if (m) return isCalendarDate(m[1]!) ? days(m[1]!, m[1]!) : 'invalid';
  m = text.take(
    /\b(?:(?:in|during|over|for|within)\s+)?(?:the\s+)?(?:last|past|previous)\s+(\d+)\s+(hour|day|week|month)s?\b/i,
  );
  if (m) {
    const n = Number(m[1]);
    const unit = m[2]!.toLowerCase();
    if (n < 1) return 'invalid';
    if (unit === 'hour') return { kind: 'hours', hours: n };
    const span = unit === 'day' ? n : unit === 'week' ? 7 * n : 30 * n;
    return days(addDays(today, -(span - 1)), today);
  }
  m = text.take(/\b(?:(?:in|during|for|on)\s+)?(?:the\s+)?(today|yesterday)\b/i);
  if (m) return m[1]!.toLowerCase() === 'today' ? days(today, today) : days(addDays(today, -1), addDays(today, -1));
  m = text.take(/\b(?:(?:in|during|for|over)\s+)?(?:the\s+)?past\s+(hour|day|week|month)\b/i);
  if (m) {
    const unit = m[1]!.toLowerCase();
    if (unit === 'hour') return { kind: 'hours', hours: 1 };
    const span = unit === 'day' ? 1 : unit === 'week' ? 7 : 30;
    return days(addDays(today, -(span - 1)), today);
  }
  m = text.take(/\b(?:(?:in|during|for|over)\s+)?(this|last|previous)\s+(week|month|year)\b/i);
  if (m) {
    const unit = m[2]!.toLowerCase();
    const start = (d: string) =>
      unit === 'week'
        ? truncate(d, 'week').slice(0, 10)
        : unit === 'month'
          ? `${d.slice(0, 7)}-01`
          : `${d.slice(0, 4)}-01-01`;
    const current = start(today);
    if (m[1]!.toLowerCase() === 'this') return days(current, today);
    const previous =
      unit === 'week'
        ? addDays(current, -7)
        : unit === 'month'
          ? addUnits(current, 'month', -1).slice(0, 10)
          : `${Number(today.slice(0, 4)) - 1}-01-01`;
    return days(previous, addDays(current, -1));
  }
  return null;
}

function parseGrouping(text: Text, property: (w: string | undefined) => string | null): Grouping | null {
  let m = text.take(
    /\b(?:grouped\s+|broken\s+down\s+|split\s+)?(?:by|per|each|every|for\s+each)\s+(hour|day|week|month)\b/i,
  );
  if (m) return { kind: 'time', unit: m[1]!.toLowerCase() as 'day' };
  m = text.take(/\b(hourly|daily|weekly|monthly)\b/i);
  if (m) {
    const unit = { hourly: 'hour', daily: 'day', weekly: 'week', monthly: 'month' }[m[1]!.toLowerCase()] as 'day';
    return { kind: 'time', unit };
  }
  m = text.take(
    /\b(?:grouped\s+|broken\s+down\s+|split\s+)?(?:by|per|for\s+each)\s+(?:event(?:[\s_]names?|\s+types?|s)?)(?![\w])/i,
  );
  if (m) return { kind: 'event' };
  m = text.take(/\b(?:grouped\s+|broken\s+down\s+|split\s+)?(?:by|per|for\s+each)\s+(?:users?|user[\s_]id)\b/i);
  if (m) return { kind: 'user' };
  const re = /\b(?:grouped\s+|broken\s+down\s+|split\s+)?(?:by|per|for\s+each)\s+([a-z_][a-z0-9_]*)\b/gi;
  for (const candidate of text.s.matchAll(re)) {
    const p = property(candidate[1]);
    if (p) {
      text.s = `${text.s.slice(0, candidate.index)} ${text.s.slice(candidate.index! + candidate[0].length)}`;
      return { kind: 'property', property: p };
    }
  }
  return null;
}

function parseMeasure(text: Text, property: (w: string | undefined) => string | null): Measure | 'invalid' {
  if (text.take(/\bnew\s+users\b/i)) return { kind: 'new_users' };
  const aggregates: [RegExp, 'sum' | 'avg' | 'max' | 'min'][] = [
    [/\b(?:sum|total)\s+(?:of\s+)?(?:the\s+)?([a-z_]\w*)\b/i, 'sum'],
    [/\b(?:average|avg|mean)\s+(?:of\s+)?(?:the\s+)?([a-z_]\w*)\b/i, 'avg'],
    [/\b(?:max|maximum|highest|largest|biggest)\s+(?:of\s+)?(?:the\s+)?([a-z_]\w*)\b/i, 'max'],
    [/\b(?:min|minimum|lowest|smallest)\s+(?:of\s+)?(?:the\s+)?([a-z_]\w*)\b/i, 'min'],
  ];
  for (const [re, kind] of aggregates) {
    const m = re.exec(text.s);
    if (!m) continue;
    const word = m[1]!.toLowerCase();
    if (kind === 'sum' && /^(events?|number|count|users?)$/.test(word)) continue;
    const p = property(word);
    if (!p) return 'invalid';
    text.take(re);
    return { kind, property: p };
  }
  if (
    text.take(/\b(?:unique|distinct|active)\s+users\b/i) ||
    text.take(/\b(?:how\s+many|number\s+of|count\s+(?:of\s+)?)\s*users\b/i) ||
    text.take(/\busers\b/i)
  ) {
    return { kind: 'users' };
  }
  return { kind: 'count' };
}
