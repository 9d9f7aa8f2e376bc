// Calendar helpers for analytics: local dates and naive local timestamps in an organization's
// time zone. Local timestamps are strings `YYYY-MM-DD HH:MM:SS` (no zone); SQL turns them into
// instants with `(x::timestamp AT TIME ZONE tz)`, so daylight-saving rules come from PostgreSQL.

export type Unit = 'hour' | 'day' | 'week' | 'month';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The dates analytics and event times may name: from the Unix epoch to the end of 2999. */
export const EARLIEST_DATE = '1970-01-01';
export const LATEST_DATE = '2999-12-31';

/** True when `s` is a real calendar date between EARLIEST_DATE and LATEST_DATE. */
export function isSupportedDate(s: string): boolean {
  return isCalendarDate(s) && s >= EARLIEST_DATE && s <= LATEST_DATE;
}

/** True when `s` is a real calendar date `YYYY-MM-DD` (2026-02-30 is not). */
export function isCalendarDate(s: string): boolean {
  const m = DATE.exec(s);
  if (!m) return false;
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  return d.getUTCFullYear() === Number(m[1]) && d.getUTCMonth() === Number(m[2]) - 1 && d.getUTCDate() === Number(m[3]);
}

/** The local calendar date of an instant in a time zone. */
export function localDate(instant: Date, timeZone: string): string {
  return localTimestamp(instant, timeZone).slice(0, 10);
}

/** The naive local timestamp `YYYY-MM-DD HH:MM:SS` of an instant in a time zone. */
export function localTimestamp(instant: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(instant);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '00';
  return `${get('year')}-${get('month')}-${get('day')} ${get('hour')}:${get('minute')}:${get('second')}`;
}

/** The instant of a naive local timestamp in a time zone (first occurrence in a DST overlap). */
export function zonedToInstant(local: string, timeZone: string): Date {
  const asUtc = Date.parse(`${local.replace(' ', 'T')}Z`);
  let guess = asUtc;
  for (let i = 0; i < 3; i++) {
    const seen = Date.parse(`${localTimestamp(new Date(guess), timeZone).replace(' ', 'T')}Z`);
    guess += asUtc - seen;
  }
  return new Date(guess);
}

// Naive timestamps are handled as UTC Dates, which have no DST: plain calendar arithmetic.
const toNaive = (s: string) => new Date(`${s.length === 10 ? `${s}T00:00:00` : s.replace(' ', 'T')}Z`);
const fromNaive = (d: Date) => d.toISOString().slice(0, 19).replace('T', ' ');

/** Adds days to a `YYYY-MM-DD` date. */
export function addDays(date: string, days: number): string {
  const d = toNaive(date);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** Adds whole units to a naive local timestamp. */
export function addUnits(local: string, unit: Unit, n: number): string {
  const d = toNaive(local);
  if (unit === 'hour') d.setUTCHours(d.getUTCHours() + n);
  else if (unit === 'day') d.setUTCDate(d.getUTCDate() + n);
  else if (unit === 'week') d.setUTCDate(d.getUTCDate() + 7 * n);
  else d.setUTCMonth(d.getUTCMonth() + n);
  return fromNaive(d);
}

/** The start of the unit containing a naive local timestamp (weeks start on Monday). */
export function truncate(local: string, unit: Unit): string {
  const d = toNaive(local);
  d.setUTCMinutes(0, 0, 0);
  if (unit !== 'hour') d.setUTCHours(0);
  if (unit === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  if (unit === 'month') d.setUTCDate(1);
  return fromNaive(d);
}

/** Bucket label: hour `YYYY-MM-DDTHH:00`, otherwise `YYYY-MM-DD`. */
export function label(local: string, unit: Unit): string {
  return unit === 'hour' ? `${local.slice(0, 10)}T${local.slice(11, 13)}:00` : local.slice(0, 10);
}

/** Number of whole hours between two naive local timestamps (b - a), as on a clock without daylight saving. */
export function hoursBetween(a: string, b: string): number {
  return Math.round((toNaive(b).getTime() - toNaive(a).getTime()) / 3_600_000);
}

/** Number of whole days between two dates (b - a). */
export function daysBetween(a: string, b: string): number {
  return Math.round((toNaive(b).getTime() - toNaive(a).getTime()) / 86_400_000);
}

/** Quiet hours as an app stores them: `HH:MM-HH:MM` in local time (`22:00-08:00`). */
export const QUIET_HOURS = /^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)$/;

/** Whether a quiet-hours setting is well formed and not empty (`22:00-08:00`, not `09:00-09:00`). */
export const validQuietHours = (value: string) => QUIET_HOURS.test(value) && value.slice(0, 5) !== value.slice(6);
