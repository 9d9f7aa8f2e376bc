// The building blocks of time expressions (period-phrases.ts reads them): unit and number words,
// weekdays and months, and the periods they make (the last N units, this unit, a weekday, a weekend,
// a range between two periods). Every period ends today at the latest.
import { addDays } from '../time.js';
import type { Anchor, CalendarUnit, Period } from './ast.js';
import { unitStart } from './periods.js';
import type { Token } from './tokens.js';

export const UNIT_WORDS: Record<string, CalendarUnit | 'hour' | 'fortnight'> = {
  day: 'day',
  days: 'day',
  week: 'week',
  weeks: 'week',
  wk: 'week',
  wks: 'week',
  month: 'month',
  months: 'month',
  mo: 'month',
  mos: 'month',
  quarter: 'quarter',
  quarters: 'quarter',
  year: 'year',
  years: 'year',
  yr: 'year',
  yrs: 'year',
  hour: 'hour',
  hours: 'hour',
  hr: 'hour',
  hrs: 'hour',
  fortnight: 'fortnight',
  fortnights: 'fortnight',
};

export const NUMBER_WORDS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  ninety: 90,
  hundred: 100,
  dozen: 12,
  couple: 2,
};

export const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
const WEEKDAY_SHORT: Record<string, number> = {
  mon: 0,
  tue: 1,
  tues: 1,
  wed: 2,
  thu: 3,
  thur: 3,
  thurs: 3,
  fri: 4,
  sat: 5,
  sun: 6,
};
export const MONTH_WORD =
  /\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?)\b/i;
export const CHRONO_LEADS = new Set([
  'on',
  'in',
  'since',
  'from',
  'at',
  'of',
  'the',
  'during',
  'until',
  'by',
  'before',
  'after',
  'for',
]);
export const AMBIGUOUS_MONTHS = new Set(['may', 'mar', 'march', 'jan', 'sat', 'sun', 'dec']);

export interface PeriodMatch {
  start: number;
  /** Index after the last token. */
  end: number;
  period: Period | null;
  /** For "from A to B" and "between A and B": the two ends as written. */
  parts?: [Period, Period];
  /** A time expression that cannot be used, with the reason (future, vague, impossible date). */
  error?: string;
}

export interface DateHit {
  start: number;
  end: number;
  /** Inclusive dates. */
  first: string;
  last: string;
  unit: CalendarUnit;
  label: string;
}

export const day = (offset: number): Anchor => ({ unit: 'day', offset });

export function word(tokens: Token[], i: number): string {
  const t = tokens[i];
  return t && (t.kind === 'word' || t.kind === 'symbol') ? t.text : '';
}

export function count(tokens: Token[], i: number): { n: number; next: number } | null {
  const t = tokens[i];
  if (!t) return null;
  if (t.kind === 'number' && !t.ordinal && Number.isInteger(t.value)) return { n: t.value!, next: i + 1 };
  if (t.kind !== 'word') return null;
  if (t.text === 'a' && word(tokens, i + 1) === 'couple')
    return { n: 2, next: word(tokens, i + 2) === 'of' ? i + 3 : i + 2 };
  if (t.text === 'couple') return { n: 2, next: word(tokens, i + 1) === 'of' ? i + 2 : i + 1 };
  const n = NUMBER_WORDS[t.text];
  return n === undefined ? null : { n, next: i + 1 };
}

export const isUnit = (w: string) => UNIT_WORDS[w] !== undefined;

export function current(u: CalendarUnit): Period {
  return { from: { unit: u, offset: 0 }, to: day(1), label: `this ${u}`, unit: u };
}

/** The last N units, ending today; `unwritten`: no number was written ("the past month" is 30 days, DESIGN §7). */
export function rolling(
  tokens: Token[],
  start: number,
  unitIndex: number,
  n: number,
  label: string | undefined,
  unwritten = false,
): PeriodMatch {
  const written = word(tokens, unitIndex);
  const u = unwritten && UNIT_WORDS[written] === 'month' ? 'thirty_days' : UNIT_WORDS[written]!;
  const end = unitIndex + 1;
  const name = (unit: string) => (n === 1 ? unit : `${n} ${unit}s`);
  if (n < 1) return { start, end, period: null, error: 'the period must be at least 1' };
  if (u === 'hour') return { start, end, period: { from: { hours: n }, label: label ?? `the last ${name('hour')}` } };
  const days = u === 'day' ? n : u === 'week' ? 7 * n : u === 'fortnight' ? 14 * n : u === 'thirty_days' ? 30 : null;
  if (days !== null) {
    return {
      start,
      end,
      period: { from: day(-(days - 1)), to: day(1), label: `the last ${days === 1 ? 'day' : `${days} days`}` },
    };
  }
  const months = u === 'month' ? n : u === 'quarter' ? 3 * n : 12 * n;
  const unitName = u === 'year' ? 'year' : u === 'quarter' ? 'quarter' : 'month';
  return {
    start,
    end,
    period: { from: { unit: 'day', offset: 1, months: -months }, to: day(1), label: `the last ${name(unitName)}` },
  };
}

export function span(start: number, end: number, a: Period, b: Period, tokens: Token[]): PeriodMatch {
  const text = tokens
    .slice(start, end)
    .map((t) => t.raw)
    .join(' ');
  if (!a.from || !b.to) return { start, end, period: null, error: 'the range needs a start and an end' };
  return { start, end, period: { from: a.from, to: b.to, label: text }, parts: [a, b] };
}

export function weekday(w: string): number | null {
  const i = WEEKDAYS.indexOf(w.endsWith('s') && WEEKDAYS.includes(w.slice(0, -1)) ? w.slice(0, -1) : w);
  if (i >= 0) return i;
  return WEEKDAY_SHORT[w] ?? null;
}

/** The most recent such weekday: today counts when `includeToday`. */
export function weekdayPeriod(today: string, wd: number, includeToday: boolean): Period {
  const todayIndex = (new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7;
  let back = (todayIndex - wd + 7) % 7;
  if (back === 0 && !includeToday) back = 7;
  const date = addDays(today, -back);
  const name = WEEKDAYS[wd]!;
  return {
    from: { date },
    to: { date: addDays(date, 1) },
    label: `${name[0]!.toUpperCase()}${name.slice(1)} ${date}`,
    unit: 'day',
  };
}

/** Saturday and Sunday: of this week (`0`) or the most recent one that is over (`-1`). */
export function weekend(today: string, which: 0 | -1): Period {
  const monday = unitStart(today, 'week');
  const todayIndex = (new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7;
  const sat = which === 0 || todayIndex >= 5 ? addDays(monday, 5) : addDays(monday, -2);
  const start = which === -1 && todayIndex >= 5 ? addDays(sat, -7) : sat;
  return { from: { date: start }, to: { date: addDays(start, 2) }, label: `the weekend of ${start}` };
}

export function datePeriod(d: DateHit): Period {
  return {
    from: { date: d.first },
    to: { date: addDays(d.last, 1) },
    label: d.label,
    unit: d.first === d.last ? 'day' : d.unit,
  };
}
