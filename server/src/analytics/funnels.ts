// Conversion funnels (GET /mcp/analytics/funnels): users enter at their first event of step 1 in
// the period; a user reaches a later step by doing its event after the event that matched the
// previous step (events at the same instant are ordered by id) and within `time_window` days of
// their entry. Rates are percentages with two decimals; the analysis names the step that loses
// the largest share of the previous step's users and writes a suggestion from the figures.

import { timeZoneOf } from '../admin/organizations.js';
import type { ServiceContext } from '../context.js';
import { type FieldError, refuseIfAny } from '../errors.js';
import type { AppRow } from '../storage/tenancy.js';
import { addDays, localDate } from '../time.js';
import { resolveDates } from './metrics.js';
import { funnelStepUsers } from './queries/funnels.js';

export interface FunnelReport {
  period: { start_date: string; end_date: string };
  steps: { event: string; users: number; conversion_rate: number; dropoff_rate?: number }[];
  overall_conversion: number;
  analysis: { biggest_dropoff: string | null; dropoff_percentage: number; recommendation: string };
}

const round2 = (n: number) => Math.round((n + Number.EPSILON) * 100) / 100;
const percent = (num: number, den: number) => (den === 0 ? 0 : round2((100 * num) / den));
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export const MIN_STEPS = 2;
export const MAX_STEPS = 10;
const MAX_NAME = 255;

/**
 * The steps of `events` as sent: comma-separated (`?events=a,b`), repeated (`?events=a&events=b`)
 * or both. Names are kept exactly as written; an empty name or a wrong number of steps is a 400.
 */
export function funnelSteps(events: string | readonly string[]): string[] {
  const steps = (typeof events === 'string' ? [events] : events).flatMap((e) => e.split(','));
  const errors: FieldError[] = [];
  steps.forEach((s, i) => {
    if (s.length === 0 || s.length > MAX_NAME) {
      errors.push({ path: `/query/events/${i}`, message: `must be an event name of 1 to ${MAX_NAME} characters` });
    }
  });
  if (steps.length < MIN_STEPS || steps.length > MAX_STEPS) {
    errors.push({ path: '/query/events', message: `must list ${MIN_STEPS} to ${MAX_STEPS} event names` });
  }
  refuseIfAny(errors);
  return steps;
}

export async function funnel(
  ctx: ServiceContext,
  app: AppRow,
  q: { events: readonly string[]; startDate?: string; endDate?: string; timeWindow: number },
): Promise<FunnelReport> {
  const timeZone = await timeZoneOf(ctx, app.organization_id);
  const { start, end } = resolveDates(q.startDate, q.endDate, localDate(ctx.clock(), timeZone));
  const users = await funnelStepUsers(ctx.db, {
    appId: app.id,
    steps: q.events,
    timeZone,
    from: `${start} 00:00:00`,
    to: `${addDays(end, 1)} 00:00:00`,
    windowDays: q.timeWindow,
    timeoutMs: ctx.config.analyticsQueryTimeoutMs,
  });
  const entered = users[0]!;
  const steps: FunnelReport['steps'] = q.events.map((event, i) =>
    i === 0
      ? { event, users: users[0]!, conversion_rate: percent(users[0]!, entered) }
      : {
          event,
          users: users[i]!,
          conversion_rate: percent(users[i]!, entered),
          dropoff_rate: percent(users[i - 1]! - users[i]!, users[i - 1]!),
        },
  );
  let worst = -1;
  for (let i = 1; i < steps.length; i++) {
    if (steps[i]!.dropoff_rate! > 0 && (worst < 0 || steps[i]!.dropoff_rate! > steps[worst]!.dropoff_rate!)) worst = i;
  }
  const overall = percent(users[users.length - 1]!, entered);
  return {
    period: { start_date: start, end_date: end },
    steps,
    overall_conversion: overall,
    analysis: {
      biggest_dropoff: worst < 0 ? null : steps[worst]!.event,
      dropoff_percentage: worst < 0 ? 0 : steps[worst]!.dropoff_rate!,
      recommendation: recommendation(q.events, users, worst, overall, q.timeWindow, start, end),
    },
  };
}

function recommendation(
  events: readonly string[],
  users: number[],
  worst: number,
  overall: number,
  windowDays: number,
  start: string,
  end: string,
): string {
  const first = events[0]!;
  if (users[0] === 0) {
    return `No user did ${first} between ${start} and ${end}, so the funnel has nobody to follow yet. Check that the event name is spelt as it is tracked, or choose another period.`;
  }
  const within = `within ${plural(windowDays, 'day')}`;
  if (worst < 0) {
    const who = users[0] === 1 ? 'The one user' : `All ${users[0]} users`;
    return `${who} who did ${first} went on to ${events[events.length - 1]} ${within}: no step loses anyone.`;
  }
  const before = events[worst - 1]!;
  const at = events[worst]!;
  const lost = users[worst - 1]! - users[worst]!;
  const share = round2((100 * lost) / users[worst - 1]!);
  const advice =
    share >= 50
      ? `Most people stop there: look first at what stands between ${before} and ${at} (its cost, the number of screens, errors), and consider a reminder to those who did ${before} without ${at}.`
      : `Improving this step first would lift the whole funnel the most.`;
  return `The biggest drop is at ${at}: ${plural(lost, 'user')} of the ${users[worst - 1]} who did ${before} (${share}%) did not do ${at} ${within} of their first ${first}. ${advice} Overall, ${overall}% of those who started reached ${events[events.length - 1]}.`;
}

/** A funnel as asked (its steps read, the window defaulted) with its report. */
export interface MeasuredFunnel {
  events: string[];
  timeWindow: number;
  report: FunnelReport;
}

/** What GET /mcp/analytics/funnels and the tool get_funnel measure. */
export async function measureFunnel(
  ctx: ServiceContext,
  app: AppRow,
  query: { events: string | readonly string[]; startDate?: string; endDate?: string; timeWindow?: number },
): Promise<MeasuredFunnel> {
  const events = funnelSteps(query.events);
  const timeWindow = query.timeWindow ?? 7;
  const report = await funnel(ctx, app, { events, startDate: query.startDate, endDate: query.endDate, timeWindow });
  return { events, timeWindow, report };
}
