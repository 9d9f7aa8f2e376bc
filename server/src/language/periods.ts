// Time expressions, one meaning everywhere (analytics questions and audience criteria, DESIGN §7):
//   today, yesterday, the day before yesterday          calendar days
//   this week|month|quarter|year (so far), MTD, YTD      from the start of the current period to the end of today
//   last|previous week|month|quarter|year                the previous calendar period
//   last|past N days|weeks (the last 7 days, past week)  N days (7 per week) ending with today
//   last|past N months|years (the past month)            from the day after the same date N months back, to the end of today
//   last|past N hours                                    the N hours before now
//   N days|weeks|months ago                              that calendar day, week or month
//   since D, after D, before D, until D, on D, in <month>, between D1 and D2, from D1 to D2
//   (over) the weekend, on Monday, Q1                    as a person reads them
// Calendar periods are those of the organization's time zone. period-phrases.ts finds these
// expressions in a text (dates in words with chrono-node); this module resolves and describes them.
import { addDays } from '../time.js';
import type { Anchor, CalendarUnit, Period } from './ast.js';

/** A point resolved against the clock: a naive local timestamp, or an instant. */
export type Resolved = { local: string } | { instant: Date };

export const pad = (n: number) => String(n).padStart(2, '0');

/** Adds months to a `YYYY-MM-DD` date, keeping the day within the target month. */
export function addMonths(date: string, months: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const index = y * 12 + (m - 1) + months;
  const year = Math.floor(index / 12);
  const month = (index % 12) + 1;
  const last = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return `${year}-${pad(month)}-${pad(Math.min(d, last))}`;
}

/** The first day of the calendar unit containing a date (weeks start on Monday). */
export function unitStart(date: string, unit: CalendarUnit): string {
  const [y, m] = date.split('-').map(Number) as [number, number, number];
  if (unit === 'day') return date;
  if (unit === 'week') {
    const day = new Date(`${date}T00:00:00Z`).getUTCDay();
    return addDays(date, -((day + 6) % 7));
  }
  if (unit === 'month') return `${y}-${pad(m)}-01`;
  if (unit === 'quarter') return `${y}-${pad(Math.floor((m - 1) / 3) * 3 + 1)}-01`;
  return `${y}-01-01`;
}

/** Moves the start of a calendar unit by whole units. */
export function shiftUnit(start: string, unit: CalendarUnit, n: number): string {
  if (unit === 'day') return addDays(start, n);
  if (unit === 'week') return addDays(start, 7 * n);
  return addMonths(start, n * (unit === 'month' ? 1 : unit === 'quarter' ? 3 : 12));
}

/** Resolves an anchor for `today` (local date) and `now`. */
export function resolveAnchor(a: Anchor, today: string, now: Date): Resolved {
  if ('hours' in a) return { instant: new Date(now.getTime() - a.hours * 3_600_000) };
  if ('date' in a) return { local: `${a.date} 00:00:00` };
  let d = shiftUnit(unitStart(today, a.unit), a.unit, a.offset);
  if (a.months) d = addMonths(d, a.months);
  return { local: `${d} 00:00:00` };
}

/** The inclusive local dates a period covers (null ends are open), for interpretations. */
export function periodDates(p: Period, today: string, now: Date): { first: string | null; last: string | null } {
  const day = (r: Resolved | undefined, end: boolean): string | null => {
    if (!r) return null;
    if ('instant' in r) return null;
    const date = r.local.slice(0, 10);
    return end ? addDays(date, -1) : date;
  };
  return {
    first: day(p.from ? resolveAnchor(p.from, today, now) : undefined, false),
    last: day(p.to ? resolveAnchor(p.to, today, now) : undefined, true),
  };
}

/** The period in words with its dates: "last week (2026-03-23 to 2026-03-29)". */
export function describePeriod(p: Period, today: string, now: Date): string {
  if (p.from && 'hours' in p.from) return p.label;
  const { first, last } = periodDates(p, today, now);
  const dates =
    first && last
      ? first === last
        ? first
        : `${first} to ${last}`
      : first
        ? `from ${first}`
        : last
          ? `until ${last}`
          : '';
  if (!dates || p.label.includes(dates)) return p.label;
  const rule = rollingDays(p);
  return `${p.label} (${rule ? `${rule}: ` : ''}${dates})`;
}

/** "today and the 6 days before" for the last N days, so that the reader sees the rule as well as the dates. */
function rollingDays(p: Period): string | null {
  const { from, to } = p;
  if (!from || !to || !('unit' in from) || !('unit' in to) || from.months) return null;
  if (from.unit !== 'day' || to.unit !== 'day' || to.offset !== 1 || from.offset >= 0) return null;
  return `today and the ${-from.offset} day${from.offset === -1 ? '' : 's'} before, from local midnight`;
}

/** The period as the end of a sentence: "over last week (...)", "since March 15 (from ...)", "on 2026-03-10". */
export function periodPhrase(p: Period, today: string, now: Date): string {
  const text = describePeriod(p, today, now);
  if (
    /^(since|after|before|until|between|from|today|yesterday|the day before)\b/i.test(p.label) ||
    /\bago$/.test(p.label)
  )
    return text;
  if (/^\d{4}-\d{2}-\d{2}$/.test(p.label) || /^[A-Z][a-z]+day \d{4}/.test(p.label)) return `on ${text}`;
  return `over ${text}`;
}

/** The period of a metric when the question names none (DESIGN §6 defaults, read for one figure). */
export function metricDefaultPeriod(metric: string, bucketed: boolean): Period {
  if (bucketed || metric === 'conversion' || metric === 'arpu') {
    return { from: { unit: 'day', offset: -29 }, to: { unit: 'day', offset: 1 }, label: 'the last 30 days' };
  }
  if (metric === 'retention' || metric === 'churn') {
    return { from: { unit: 'week', offset: -1 }, to: { unit: 'week', offset: 0 }, label: 'last week', unit: 'week' };
  }
  return { from: { unit: 'day', offset: 0 }, to: { unit: 'day', offset: 1 }, label: 'today', unit: 'day' };
}

/** Two or more adjacent periods as one ("yesterday or today", "Monday and Tuesday"), else null. */
export function mergeAdjacent(periods: Period[]): Period | null {
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  for (let i = 0; i < periods.length; i++) {
    for (let j = 0; j < periods.length; j++) {
      if (i === j) continue;
      const a = periods[i]!;
      const b = periods[j]!;
      if (a.to && b.from && same(a.to, b.from) && a.from && b.to) {
        const merged: Period = { from: a.from, to: b.to, label: `${a.label} and ${b.label}` };
        const rest = periods.filter((_, k) => k !== i && k !== j);
        return rest.length === 0 ? merged : mergeAdjacent([merged, ...rest]);
      }
    }
  }
  return null;
}
