// Time rules of campaigns, as pure functions: cron expressions read in the organization's time zone
// (cron-parser follows the zone's daylight-saving rules), the default daily recurrence, quiet
// hours (`HH:MM-HH:MM`, possibly across midnight) and when a send held by them may go.
import cronParser from 'cron-parser';
import { localTimestamp, QUIET_HOURS, zonedToInstant } from '../time.js';

/** Why a cron expression is refused, or null when it is valid. */
export function cronProblem(expression: string): string | null {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return 'must have five fields: minute hour day-of-month month day-of-week';
  try {
    cronParser.parseExpression(expression, { tz: 'UTC' });
    return null;
  } catch (err) {
    return `is not a valid cron expression (${(err as Error).message})`;
  }
}

/** The first run of `expression` strictly after `after`, in `timeZone`. */
export function nextCronRun(expression: string, after: Date, timeZone: string): Date {
  return cronParser.parseExpression(expression, { currentDate: after, tz: timeZone }).next().toDate();
}

/**
 * The shortest time, in milliseconds, between two consecutive runs among the first `runs` runs of
 * `expression` at or after `from`, in `timeZone` (daylight-saving changes included).
 */
export function shortestGapMs(expression: string, from: Date, timeZone: string, runs = 100): number {
  const it = cronParser.parseExpression(expression, { currentDate: new Date(from.getTime() - 1), tz: timeZone });
  let previous = it.next().toDate().getTime();
  let shortest = Number.POSITIVE_INFINITY;
  for (let i = 1; i < runs; i++) {
    const at = it.next().toDate().getTime();
    shortest = Math.min(shortest, at - previous);
    previous = at;
  }
  return shortest;
}

/** Daily at the local time of `at` in `timeZone` (the default recurrence). */
export function dailyAt(at: Date, timeZone: string): string {
  const local = localTimestamp(at, timeZone);
  return `${Number(local.slice(14, 16))} ${Number(local.slice(11, 13))} * * *`;
}

/**
 * When a send due at `now` may go given quiet hours in `timeZone`: `now` outside them, else the
 * end of the quiet period (in local time, so daylight-saving changes move it with the clock).
 */
export function quietHoursEnd(now: Date, quietHours: string | null, timeZone: string): Date {
  if (!quietHours) return now;
  const m = QUIET_HOURS.exec(quietHours);
  if (!m) return now;
  const start = Number(m[1]) * 60 + Number(m[2]);
  const end = Number(m[3]) * 60 + Number(m[4]);
  const local = localTimestamp(now, timeZone);
  const minute = Number(local.slice(11, 13)) * 60 + Number(local.slice(14, 16));
  const inside = start < end ? minute >= start && minute < end : minute >= start || minute < end;
  if (!inside) return now;
  let day = local.slice(0, 10);
  // An overnight period entered in the evening ends on the next local day.
  if (start > end && minute >= start) day = nextDay(day);
  return zonedToInstant(`${day} ${m[3]}:${m[4]}:00`, timeZone);
}

function nextDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}
