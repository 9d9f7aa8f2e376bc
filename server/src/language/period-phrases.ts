// Recognition of time expressions in a question or criteria (their meaning is in periods.ts):
// relative periods ("last week", "the past 30 days", "3 days ago"), ranges ("between ... and ...",
// "since ..."), and dates in words or digits, read with chrono-node. A month or day without a year
// is its most recent occurrence that has begun.
import type { Anchor, CalendarUnit, Period } from './ast.js';
import { chronoDates, dateAt } from './period-dates.js';
import {
  count,
  current,
  type DateHit,
  datePeriod,
  day,
  isUnit,
  type PeriodMatch,
  rolling,
  span,
  UNIT_WORDS,
  WEEKDAYS,
  weekday,
  weekdayPeriod,
  weekend,
  word,
} from './period-words.js';
import type { Token } from './tokens.js';

export { NUMBER_WORDS, type PeriodMatch, UNIT_WORDS } from './period-words.js';

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

const LEADS = new Set(['in', 'during', 'for', 'over', 'within', 'on', 'of', 'from', 'at', 'throughout']);

/** One place in the text, with what every matcher uses. */
interface At {
  tokens: Token[];
  i: number;
  today: string;
  dates: Map<number, DateHit>;
  now: Date;
  /** The word k tokens on. */
  w: (k: number) => string;
  /** A match of `len` tokens from here. */
  hit: (len: number, period: Period | null, error?: string) => PeriodMatch;
  /** A calendar unit (not an hour or fortnight) k tokens on. */
  calendarUnit: (k: number) => CalendarUnit | null;
}

/**
 * The matchers, in order: each returns a match, null when no period can start here (and the later
 * ones may not try), or undefined to let the next one try.
 */
const MATCHERS = [matchRange, matchLead, matchCurrent, matchLast, matchAgo, matchBoundary, matchDate];

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
  const calendarUnit = (k: number): CalendarUnit | null => {
    const u = UNIT_WORDS[w(k)];
    return u && u !== 'hour' && u !== 'fortnight' ? u : null;
  };
  const at: At = { tokens, i, today, dates, now, w, hit, calendarUnit };
  for (const match of MATCHERS) {
    const m = match(at);
    if (m !== undefined) return m;
  }
  return null;
}

/** between D1 and D2, from D1 to D2 */
function matchRange(at: At): PeriodMatch | null | undefined {
  const { tokens, i, today, dates, now, w } = at;
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
  return undefined;
}

/** Leading prepositions belong to the expression: "in the last 7 days", "over the weekend". */
function matchLead(at: At): PeriodMatch | null | undefined {
  const { tokens, i, today, dates, now, w } = at;
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
  return undefined;
}

/** Today, yesterday, the future (refused), so far this month, this week, this weekend. */
function matchCurrent(at: At): PeriodMatch | null | undefined {
  const { tokens, i, today, w, hit, calendarUnit } = at;
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
  return undefined;
}

/** The last / past / previous N units; last week; the past week. */
function matchLast(at: At): PeriodMatch | null | undefined {
  const { tokens, i, today, w, hit } = at;
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
  return undefined;
}

/** More or less than N units ago; N units ago (that calendar day, week or month); the weekend. */
function matchAgo(at: At): PeriodMatch | null | undefined {
  const { tokens, i, today, w, hit } = at;
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
  return undefined;
}

/** Since / after / before / until D. */
function matchBoundary(at: At): PeriodMatch | null | undefined {
  const { tokens, i, today, dates, now, w, hit, calendarUnit } = at;
  if (
    w(0) === 'since' ||
    w(0) === 'after' ||
    w(0) === 'before' ||
    w(0) === 'until' ||
    w(0) === 'till' ||
    w(0) === 'through' ||
    (w(0) === 'up' && w(1) === 'to')
  ) {
    // "since the start of March", "until the end of last week": the start or end of that period
    const edge = w(1) === 'the' && ['start', 'beginning', 'end'].includes(w(2)) && w(3) === 'of';
    const k = w(0) === 'up' ? 2 : edge ? 4 : 1;
    const unit = edge && w(4) === 'the' ? calendarUnit(5) : null;
    const inner = unit
      ? { start: i + 4, end: i + 6, period: current(unit) }
      : matchAt(tokens, i + k, today, dates, now);
    if (!inner || inner.start !== i + k) return null;
    if (!inner.period) return { ...inner, start: i };
    const p = inner.period;
    const len = inner.end - i;
    const what = tokens
      .slice(edge ? i + 1 : i + k, inner.end)
      .map((t) => t.raw)
      .join(' ');
    const start = edge ? (w(2) === 'end' ? p.to : p.from) : p.from;
    const end = edge ? start : p.to;
    if (w(0) === 'since') return hit(len, start ? { from: start, label: `since ${what}` } : null, 'since when?');
    if (w(0) === 'after') return hit(len, end ? { from: end, label: `after ${what}` } : null, 'after when?');
    if (w(0) === 'before') return hit(len, start ? { to: start, label: `before ${what}` } : null, 'before when?');
    return hit(len, end ? { to: end, label: `until ${what}` } : null, 'until when?');
  }
  return undefined;
}

/** Dates: ISO, slash and words (chrono-node), quarters, weekdays, years. */
function matchDate(at: At): PeriodMatch | null | undefined {
  const { tokens, i, today, dates, w, hit } = at;
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
