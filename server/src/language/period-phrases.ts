// Recognition of time expressions in a question or criteria (their meaning is in periods.ts):
// relative periods ("last week", "the past 30 days", "3 days ago"), ranges ("between ... and ...",
// "since ..."), and dates in words or digits, read with chrono-node. A month or day without a year
// is its most recent occurrence that has begun.
import * as chrono from 'chrono-node';
import { addDays, isCalendarDate } from '../time.js';
import type { Anchor, CalendarUnit, Period } from './ast.js';
import { addMonths, pad, unitStart } from './periods.js';
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

const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
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
const MONTH_WORD =
  /\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?)\b/i;
const CHRONO_LEADS = new Set([
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
const AMBIGUOUS_MONTHS = new Set(['may', 'mar', 'march', 'jan', 'sat', 'sun', 'dec']);

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

interface DateHit {
  start: number;
  end: number;
  /** Inclusive dates. */
  first: string;
  last: string;
  unit: CalendarUnit;
  label: string;
}

const day = (offset: number): Anchor => ({ unit: 'day', offset });

/** Finds every time expression in the tokens. `today` is the local date. */
export function findPeriods(tokens: Token[], source: string, today: string, now: Date): PeriodMatch[] {
  const dates = chronoDates(tokens, source, today);
  const out: PeriodMatch[] = [];
  for (let i = 0; i < tokens.length; ) {
    const m = matchAt(tokens, i, today, dates, now);
    if (m) {
      out.push(m);
      i = m.end;
    } else i++;
  }
  return out;
}

function word(tokens: Token[], i: number): string {
  const t = tokens[i];
  return t && (t.kind === 'word' || t.kind === 'symbol') ? t.text : '';
}

function count(tokens: Token[], i: number): { n: number; next: number } | null {
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

const isUnit = (w: string) => UNIT_WORDS[w] !== undefined;
const LEADS = new Set(['in', 'during', 'for', 'over', 'within', 'on', 'of', 'from', 'at', 'throughout']);

function matchAt(
  tokens: Token[],
  i: number,
  today: string,
  dates: Map<number, DateHit>,
  now: Date,
): PeriodMatch | null {
  const w = (k: number) => word(tokens, i + k);
  const hit = (len: number, period: Period | null, error?: string): PeriodMatch => ({
    start: i,
    end: i + len,
    period,
    ...(error ? { error } : {}),
  });
  // between D1 and D2, from D1 to D2
  if (w(0) === 'between' || w(0) === 'from') {
    const a = matchAt(tokens, i + 1, today, dates, now);
    if (a?.period && a.start === i + 1) {
      const sep = word(tokens, a.end);
      if (['and', 'to', 'until', 'till', 'through', 'thru', '-'].includes(sep)) {
        const b = matchAt(tokens, a.end + 1, today, dates, now);
        if (b?.period && b.start === a.end + 1) return span(i, b.end, a.period, b.period, tokens);
      }
    }
    if (w(0) === 'between') return null;
  }
  // Leading prepositions belong to the expression: "in the last 7 days", "over the weekend".
  // ("IN" in capitals is a value, such as India's country code, never a preposition)
  const raw = tokens[i]?.raw ?? '';
  if (LEADS.has(w(0)) && !(raw.length > 1 && raw === raw.toUpperCase())) {
    const inner = matchAt(tokens, i + 1, today, dates, now);
    if (inner && inner.start === i + 1) return { ...inner, start: i };
    if (w(0) === 'over' || w(0) === 'in' || w(0) === 'within' || w(0) === 'for') {
      // "within 24 hours", "in 7 days": a rolling window
      const c = count(tokens, i + 1);
      if (c && isUnit(word(tokens, c.next)) && word(tokens, c.next + 1) !== 'ago') {
        return rolling(tokens, i, c.next, c.n, `the last ${c.n} ${word(tokens, c.next)}`);
      }
    }
    return null;
  }
  const calendarUnit = (k: number): CalendarUnit | null => {
    const u = UNIT_WORDS[w(k)];
    return u && u !== 'hour' && u !== 'fortnight' ? u : null;
  };
  if (w(0) === 'the' && w(1) === 'day' && w(2) === 'before' && w(3) === 'yesterday') {
    return hit(4, { from: day(-2), to: day(-1), label: 'the day before yesterday', unit: 'day' });
  }
  if (w(0) === 'today' || w(0) === 'tonight') {
    const so = w(1) === 'so' && w(2) === 'far' ? 2 : 0;
    return hit(1 + so, { from: day(0), to: day(1), label: 'today', unit: 'day' });
  }
  if (w(0) === 'yesterday') return hit(1, { from: day(-1), to: day(0), label: 'yesterday', unit: 'day' });
  if (w(0) === 'tomorrow') return hit(1, null, 'it is in the future: Tally answers about what already happened');
  if (
    (w(0) === 'next' && (isUnit(w(1)) || count(tokens, i + 1) || WEEKDAYS.includes(w(1)))) ||
    (w(0) === 'coming' && isUnit(w(1)))
  ) {
    return hit(2, null, 'it is in the future: Tally answers about what already happened');
  }
  // so far this month / this month so far / month to date / MTD
  const todate: Record<string, CalendarUnit> = { wtd: 'week', mtd: 'month', qtd: 'quarter', ytd: 'year' };
  if (todate[w(0)]) return hit(1, current(todate[w(0)]!));
  if (w(0) === 'so' && w(1) === 'far' && (w(2) === 'this' || w(2) === 'in') && calendarUnit(3)) {
    return hit(4, current(calendarUnit(3)!));
  }
  if (calendarUnit(0) && calendarUnit(0) !== 'day' && w(1) === 'to' && w(2) === 'date')
    return hit(3, current(calendarUnit(0)!));
  if (
    (w(0) === 'this' || w(0) === 'current' || (w(0) === 'the' && w(1) === 'current')) &&
    !(w(0) === 'this' && w(1) === 'past')
  ) {
    const k = w(0) === 'the' ? 2 : 1;
    const u = calendarUnit(k);
    if (u) {
      const so = w(k + 1) === 'so' && w(k + 2) === 'far' ? 2 : 0;
      return hit(k + 1 + so, current(u));
    }
    if (w(k) === 'weekend') return hit(k + 1, weekend(today, -1));
    const wd = weekday(w(k));
    if (wd !== null) return hit(k + 1, weekdayPeriod(today, wd, true));
  }
  // the last / past / previous N units; last week; the past week
  {
    let k = 0;
    let article = false;
    if (w(k) === 'the') {
      article = true;
      k++;
    }
    if (w(k) === 'this' && w(k + 1) === 'past') {
      article = true;
      k++;
    }
    const lead = w(k);
    if (lead === 'last' || lead === 'past' || lead === 'previous' || lead === 'prior' || lead === 'recent') {
      k++;
      if (w(k) === 'few' || w(k) === 'several' || (w(k) === 'couple' && !count(tokens, i + k))) {
        return hit(k + 2, null, `"${w(k)}" is not a number of ${w(k + 1) || 'days'}: say how many`);
      }
      const c = count(tokens, i + k);
      if (c && !(c.n === 1 && (w(k) === 'a' || w(k) === 'an') && !isUnit(word(tokens, c.next)))) {
        if (isUnit(word(tokens, c.next))) return rolling(tokens, i, c.next, c.n, undefined);
      }
      if (w(k) === 'weekend') return hit(k + 1, weekend(today, -1));
      const wd = weekday(w(k));
      if (wd !== null) return hit(k + 1, weekdayPeriod(today, wd, false));
      const u = UNIT_WORDS[w(k)];
      if (u) {
        // "last week": the previous calendar week; "the last week", "past week": 7 days ending today
        if (!article && lead !== 'past' && lead !== 'recent' && u !== 'hour' && u !== 'fortnight') {
          return hit(k + 1, { from: { unit: u, offset: -1 }, to: { unit: u, offset: 0 }, label: `last ${u}`, unit: u });
        }
        return rolling(tokens, i, i + k, 1, undefined, true);
      }
    }
  }
  // more than / less than N units ago
  {
    const lead =
      w(0) === 'more' && w(1) === 'than' ? 2 : w(0) === 'over' ? 1 : w(0) === 'less' && w(1) === 'than' ? 2 : 0;
    const c = lead ? count(tokens, i + lead) : null;
    if (c && isUnit(word(tokens, c.next)) && word(tokens, c.next + 1) === 'ago') {
      const u = UNIT_WORDS[word(tokens, c.next)]!;
      const len = c.next + 2 - i;
      const older = w(0) !== 'less';
      const label = `${older ? 'more' : 'less'} than ${c.n} ${word(tokens, c.next)} ago`;
      let anchor: Anchor;
      if (u === 'hour') anchor = { hours: c.n };
      else if (u === 'day' || u === 'week' || u === 'fortnight')
        anchor = { unit: 'day', offset: -(c.n * (u === 'day' ? 1 : u === 'week' ? 7 : 14)) + (older ? 0 : 1) };
      else
        anchor = {
          unit: 'day',
          offset: older ? 0 : 1,
          months: -(c.n * (u === 'month' ? 1 : u === 'quarter' ? 3 : 12)),
        };
      return hit(len, older ? { to: anchor, label } : { from: anchor, to: day(1), label });
    }
  }
  // N units ago: that calendar day / week / month
  {
    const c = count(tokens, i);
    if (c && isUnit(word(tokens, c.next)) && word(tokens, c.next + 1) === 'ago') {
      const u = UNIT_WORDS[word(tokens, c.next)]!;
      const len = c.next + 2 - i;
      if (u === 'hour') return hit(len, { from: { hours: c.n + 1 }, to: { hours: c.n }, label: `${c.n} hours ago` });
      if (u === 'fortnight') return hit(len, null, 'say how many days or weeks ago');
      return hit(len, {
        from: { unit: u, offset: -c.n },
        to: { unit: u, offset: -c.n + 1 },
        label: `${c.n} ${u}${c.n === 1 ? '' : 's'} ago`,
        unit: u,
      });
    }
  }
  if (w(0) === 'weekend' || (w(0) === 'the' && w(1) === 'weekend'))
    return hit(w(0) === 'the' ? 2 : 1, weekend(today, -1));
  // since / after / before / until D
  if (
    w(0) === 'since' ||
    w(0) === 'after' ||
    w(0) === 'before' ||
    w(0) === 'until' ||
    w(0) === 'till' ||
    w(0) === 'through' ||
    (w(0) === 'up' && w(1) === 'to')
  ) {
    const k = w(0) === 'up' ? 2 : 1;
    const inner = matchAt(tokens, i + k, today, dates, now);
    if (!inner || inner.start !== i + k) return null;
    if (!inner.period) return { ...inner, start: i };
    const p = inner.period;
    const len = inner.end - i;
    const what = tokens
      .slice(i + k, inner.end)
      .map((t) => t.raw)
      .join(' ');
    if (w(0) === 'since') return hit(len, p.from ? { from: p.from, label: `since ${what}` } : null, 'since when?');
    if (w(0) === 'after') return hit(len, p.to ? { from: p.to, label: `after ${what}` } : null, 'after when?');
    if (w(0) === 'before') return hit(len, p.from ? { to: p.from, label: `before ${what}` } : null, 'before when?');
    return hit(len, p.to ? { to: p.to, label: `until ${what}` } : null, 'until when?');
  }
  // Dates: ISO, slash and words (chrono-node), quarters, weekdays, years
  const d = dateAt(tokens, i, dates, today);
  if (d) {
    if (d.error) return hit(d.end - i, null, d.error);
    const sep = word(tokens, d.end);
    if (['to', 'until', 'till', 'through', 'thru', '-'].includes(sep)) {
      const b = dateAt(tokens, d.end + 1, dates, today);
      if (b && !b.error) return span(i, b.end, datePeriod(d), datePeriod(b), tokens);
    }
    return { start: i, end: d.end, period: datePeriod(d) };
  }
  const wd = weekday(w(0));
  if (wd !== null) return hit(1, weekdayPeriod(today, wd, true));
  return null;
}

function current(u: CalendarUnit): Period {
  return { from: { unit: u, offset: 0 }, to: day(1), label: `this ${u}`, unit: u };
}

/** The last N units, ending today; `unwritten`: no number was written ("the past month" is 30 days, DESIGN §7). */
function rolling(
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

function span(start: number, end: number, a: Period, b: Period, tokens: Token[]): PeriodMatch {
  const text = tokens
    .slice(start, end)
    .map((t) => t.raw)
    .join(' ');
  if (!a.from || !b.to) return { start, end, period: null, error: 'the range needs a start and an end' };
  return { start, end, period: { from: a.from, to: b.to, label: text }, parts: [a, b] };
}

function weekday(w: string): number | null {
  const i = WEEKDAYS.indexOf(w.endsWith('s') && WEEKDAYS.includes(w.slice(0, -1)) ? w.slice(0, -1) : w);
  if (i >= 0) return i;
  return WEEKDAY_SHORT[w] ?? null;
}

/** The most recent such weekday: today counts when `includeToday`. */
function weekdayPeriod(today: string, wd: number, includeToday: boolean): Period {
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
function weekend(today: string, which: 0 | -1): Period {
  const monday = unitStart(today, 'week');
  const todayIndex = (new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7;
  const sat = which === 0 || todayIndex >= 5 ? addDays(monday, 5) : addDays(monday, -2);
  const start = which === -1 && todayIndex >= 5 ? addDays(sat, -7) : sat;
  return { from: { date: start }, to: { date: addDays(start, 2) }, label: `the weekend of ${start}` };
}

function datePeriod(d: DateHit): Period {
  return {
    from: { date: d.first },
    to: { date: addDays(d.last, 1) },
    label: d.label,
    unit: d.first === d.last ? 'day' : d.unit,
  };
}

interface DateAt extends DateHit {
  error?: string;
}

function dateAt(tokens: Token[], i: number, dates: Map<number, DateHit>, today: string): DateAt | null {
  const t = tokens[i];
  if (!t) return null;
  if (t.kind === 'date' && t.date) {
    if (t.date.length > 10) {
      const at = Date.parse(t.date);
      if (Number.isNaN(at))
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
    const date = t.date.slice(0, 10);
    if (!isCalendarDate(date))
      return {
        start: i,
        end: i + 1,
        first: '',
        last: '',
        unit: 'day',
        label: t.raw,
        error: `"${t.raw}" is not a valid date`,
      };
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
function chronoDates(tokens: Token[], source: string, today: string): Map<number, DateHit> {
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
      !['in', 'since', 'during', 'of', 'until', 'before', 'after', 'from', 'between', 'through'].includes(
        word(tokens, first - 1),
      )
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
  return found;
}

function toDates(
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
