// Dates in a question or criteria: ISO dates and date-times, slash dates, and dates in words read
// with chrono-node ("March 10th", "in February", "Q1", "2025"); a month or day without a year is its
// most recent occurrence that has begun.
import * as chrono from 'chrono-node';
import { addDays, isCalendarDate } from '../time.js';
import type { CalendarUnit } from './ast.js';
import { AMBIGUOUS_MONTHS, CHRONO_LEADS, type DateHit, MONTH_WORD, WEEKDAYS, word } from './period-words.js';
import { addMonths, pad } from './periods.js';
import type { Token } from './tokens.js';

export interface DateAt extends DateHit {
  error?: string;
}

export function dateAt(tokens: Token[], i: number, dates: Map<number, DateHit>, today: string): DateAt | null {
  const t = tokens[i];
  if (!t) return null;
  if (t.kind === 'date' && t.date) {
    const date = t.date.slice(0, 10);
    if ((t.date.length > 10 && Number.isNaN(Date.parse(t.date))) || !isCalendarDate(date)) {
      return {
        start: i,
        end: i + 1,
        first: '',
        last: '',
        unit: 'day',
        label: t.raw,
        error: `"${t.raw}" is not a valid date`,
      };
    }
    return { start: i, end: i + 1, first: date, last: date, unit: 'day', label: date };
  }
  // Q1 [2026], first quarter
  const q = /^q([1-4])$/.exec(t.text);
  if (q) {
    const next = tokens[i + 1];
    const year =
      next?.kind === 'number' && next.value! >= 2000 && next.value! < 2100 ? next.value! : Number(today.slice(0, 4));
    const first = `${year}-${pad((Number(q[1]) - 1) * 3 + 1)}-01`;
    if (first > today && year === Number(today.slice(0, 4)) && !(next?.kind === 'number')) {
      const prev = `${year - 1}-${first.slice(5)}`;
      return {
        start: i,
        end: i + 1,
        first: prev,
        last: addDays(addMonths(prev, 3), -1),
        unit: 'quarter',
        label: `Q${q[1]} ${year - 1}`,
      };
    }
    return {
      start: i,
      end: next?.kind === 'number' && next.value === year ? i + 2 : i + 1,
      first,
      last: addDays(addMonths(first, 3), -1),
      unit: 'quarter',
      label: `Q${q[1]} ${year}`,
    };
  }
  // a bare year: "in 2025"
  if (
    t.kind === 'number' &&
    !t.ordinal &&
    t.value! >= 2000 &&
    t.value! < 2100 &&
    Number.isInteger(t.value) &&
    ['in', 'during', 'for', 'since', 'of', 'before', 'after', 'until'].includes(word(tokens, i - 1))
  ) {
    return {
      start: i,
      end: i + 1,
      first: `${t.value}-01-01`,
      last: `${t.value}-12-31`,
      unit: 'year',
      label: String(t.value),
    };
  }
  return dates.get(i) ?? null;
}

/** Dates written in words or with slashes, found by chrono-node and mapped onto the tokens. */
export function chronoDates(tokens: Token[], source: string, today: string): Map<number, DateHit> {
  const found = new Map<number, DateHit>();
  if (!MONTH_WORD.test(source) && !/\d{1,2}\/\d{1,2}/.test(source)) return found;
  const reference = new Date(`${today}T12:00:00Z`);
  let results: chrono.ParsedResult[];
  try {
    results = chrono.en.parse(source, { instant: reference, timezone: 0 }, { forwardDate: false });
  } catch {
    return found;
  }
  for (const r of results) {
    const text = r.text;
    if (!MONTH_WORD.test(text) && !/\d{1,2}\/\d{1,2}/.test(text)) continue;
    let first = tokens.findIndex((t) => t.start >= r.index);
    while (
      first >= 0 &&
      first < tokens.length - 1 &&
      CHRONO_LEADS.has(tokens[first]!.text) &&
      tokens[first]!.kind === 'word'
    )
      first++;
    let last = first;
    while (last + 1 < tokens.length && tokens[last + 1]!.end <= r.index + text.length) last++;
    if (first < 0) continue;
    const start = tokens[first]!;
    // "may" and "march" are also words: only as dates next to a number or after a preposition
    const words = text.toLowerCase().split(/\s+/);
    if (
      words.length === 1 &&
      AMBIGUOUS_MONTHS.has(words[0]!) &&
      // a month alone after a preposition or a comparison ("February vs March", "jan versus mar")
      ![
        'in',
        'since',
        'during',
        'of',
        'until',
        'before',
        'after',
        'from',
        'between',
        'through',
        'vs',
        'versus',
        'v',
        'against',
      ].includes(word(tokens, first - 1))
    ) {
      continue;
    }
    if (start.kind === 'word' && WEEKDAYS.includes(start.text)) continue;
    const hit = toDates(r.start, today);
    if (!hit) continue;
    let { first: a, last: b, unit, label } = hit;
    if (r.end) {
      const end = toDates(r.end, today);
      if (!end) continue;
      b = end.last;
      unit = 'day';
      label = text;
      if (b < a) continue;
    }
    found.set(first, { start: first, end: last + 1, first: a, last: b, unit, label: label === text ? text : label });
  }
  mayBeforeVs(tokens, found, reference, today);
  return found;
}

/** Words before "may" that make it the month (chrono reads it as one only after "in"). */
const MAY_AFTER = new Set(['since', 'of', 'until', 'till', 'before', 'after', 'from', 'through', 'during']);

/** "May vs June", "since May", "the start of may": "may" is the month there too. */
function mayBeforeVs(tokens: Token[], found: Map<number, DateHit>, reference: Date, today: string) {
  for (let i = 0; i < tokens.length; i++) {
    if (word(tokens, i) !== 'may' || found.has(i)) continue;
    if (!['vs', 'versus', 'v'].includes(word(tokens, i + 1)) && !MAY_AFTER.has(word(tokens, i - 1))) continue;
    const [r] = chrono.en.parse('in may', { instant: reference, timezone: 0 }, { forwardDate: false });
    const hit = r && toDates(r.start, today);
    if (hit) found.set(i, { start: i, end: i + 1, first: hit.first, last: hit.last, unit: hit.unit, label: hit.label });
  }
}

export function toDates(
  c: chrono.ParsedComponents,
  today: string,
): { first: string; last: string; unit: CalendarUnit; label: string } | null {
  const month = c.isCertain('month') ? c.get('month') : null;
  const dayOfMonth = c.isCertain('day') ? c.get('day') : null;
  if (month === null) return null;
  let year = c.isCertain('year') ? c.get('year')! : Number(today.slice(0, 4));
  const build = (y: number) =>
    dayOfMonth === null ? `${y}-${pad(month)}-01` : `${y}-${pad(month)}-${pad(dayOfMonth)}`;
  // Without a year: the most recent occurrence that has started
  if (!c.isCertain('year') && build(year) > today) year -= 1;
  const first = build(year);
  if (!isCalendarDate(first)) return null;
  if (dayOfMonth === null) {
    const names = [
      'January',
      'February',
      'March',
      'April',
      'May',
      'June',
      'July',
      'August',
      'September',
      'October',
      'November',
      'December',
    ];
    return { first, last: addDays(addMonths(first, 1), -1), unit: 'month', label: `${names[month - 1]} ${year}` };
  }
  return { first, last: first, unit: 'day', label: first };
}
