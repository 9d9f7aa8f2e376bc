// The rules for push campaigns that an AI client creates through an MCP key. A model may act on
// text that anonymous website visitors wrote (event names reach it as data), so nothing it starts
// sends at once or unattended: the app must allow it (`mcp_campaigns`), every first send is at
// least MCP_CAMPAIGN_LEAD_MINUTES away (time for an operator to see and pause it), and no
// schedule reaches a user more often than hourly. The admin API and the CLI are not bound by them.
import type { CampaignCreate } from '@tally/client';
import { AppError, ForbiddenError } from '../errors.js';
import type { AppRow } from '../storage/tenancy.js';
import { shortestGapMs } from './campaign-schedule.js';

/** The shortest interval an MCP campaign may reach a user at: between recurring runs, and a trigger's cooldown. */
export const MCP_MIN_INTERVAL_MINUTES = 60;
/** Runs of a recurrence that are checked for the interval rule. */
const RUNS_CHECKED = 100;

export function mcpCampaignsAllowed(app: AppRow): void {
  if (app.mcp_campaigns) return;
  throw new ForbiddenError(
    'MCP_CAMPAIGNS_DISABLED',
    `The app ${app.id} does not let AI clients create push campaigns. An operator can allow it with: tally apps update ${app.id} --mcp-campaigns on`,
  );
}

function refused(path: string, message: string, details: Record<string, unknown>): AppError {
  return new AppError(400, 'INVALID_REQUEST', message, { ...details, errors: [{ path, message }] });
}

/**
 * The earliest first send an MCP campaign may have (`now` plus the lead time), after checking the
 * caller's `scheduled_at`, recurrence and cooldown against the rules; throws 400 INVALID_REQUEST
 * with `details.earliest_scheduled_at` or `details.min_interval_minutes` so a model can correct its call.
 */
export function mcpEarliestStart(input: CampaignCreate, now: Date, leadMinutes: number): Date {
  const earliest = new Date(now.getTime() + leadMinutes * 60_000);
  if (input.scheduled_at !== undefined && new Date(input.scheduled_at) < earliest) {
    throw refused(
      '/scheduled_at',
      `Campaigns created through MCP start at least ${leadMinutes} minutes after they are created, so that a person can review or pause them. Use a scheduled_at of ${earliest.toISOString()} or later.`,
      { earliest_scheduled_at: earliest.toISOString() },
    );
  }
  if (input.schedule_type === 'trigger' && input.trigger_cooldown_hours !== undefined) {
    if (input.trigger_cooldown_hours * 60 < MCP_MIN_INTERVAL_MINUTES) {
      throw refused(
        '/trigger_cooldown_hours',
        'A trigger campaign created through MCP may reach the same user at most once an hour: use a trigger_cooldown_hours of 1 or more.',
        { min_interval_minutes: MCP_MIN_INTERVAL_MINUTES },
      );
    }
  }
  return earliest;
}

/** Refuses a recurrence two of whose next runs (from `firstRun`, in `timeZone`) are less than an hour apart. */
export function mcpRecurrenceAllowed(recurrence: string, firstRun: Date, timeZone: string): void {
  const gap = shortestGapMs(recurrence, firstRun, timeZone, RUNS_CHECKED);
  if (gap >= MCP_MIN_INTERVAL_MINUTES * 60_000) return;
  throw refused(
    '/recurrence',
    `The recurrence "${recurrence}" runs ${Math.round(gap / 60_000)} minutes apart at its closest; campaigns created through MCP may run at most once an hour (for example "0 9 * * *" for daily at 09:00).`,
    { min_interval_minutes: MCP_MIN_INTERVAL_MINUTES },
  );
}
