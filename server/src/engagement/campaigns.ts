// Push campaigns: creation (audience by id or from a prompt, trigger event by name or matched from a
// prompt, schedule checks), listing, pause and resume. The admin API, the CLI and the MCP tools all
// call these (engagement/views.ts shapes what they return); the engine that runs them is
// engagement/campaign-runs.ts.
import type { CampaignCreate } from '@tally/client';
import { type AudienceDraft, draftAudience, storeAudience } from '../audiences/audiences.js';
import { findAppAudience } from '../audiences/members.js';
import type { ServiceContext } from '../context.js';
import { ConflictError, type FieldError, NotFoundError, refuseIfAny } from '../errors.js';
import { isUuid, uuidv7 } from '../ids.js';
import type { ErasureHooks } from '../privacy/erasure-hooks.js';
import { type Actor, recordAppAction } from '../storage/audit.js';
import { inTransaction } from '../storage/handle.js';
import { type AppRow, findApp, findOrganization } from '../storage/tenancy.js';
import { mcpCampaignsAllowed, mcpEarliestStart, mcpRecurrenceAllowed } from './campaign-mcp-rules.js';
import { cronProblem, dailyAt, nextCronRun } from './campaign-schedule.js';
import { matchTriggerEvent } from './campaign-trigger-match.js';
import { cancelQueuedCampaignSends } from './queries/campaign-sends.js';
import {
  type CampaignCounts,
  type CampaignRow,
  type CampaignStatus,
  campaignCounts,
  countCampaigns,
  findCampaign,
  findCampaignById,
  insertCampaign,
  listCampaigns,
  moveCampaign,
} from './queries/campaigns.js';

export type CampaignInput = CampaignCreate;

export const DEFAULT_INACTIVITY_DAYS = 7;
export const DEFAULT_COOLDOWN_HOURS = 24;
export const DEFAULT_PROMPT_CHARACTERS = 150;

/** The organization's time zone of an app (UTC when unset). */
export async function appTimeZone(ctx: ServiceContext, app: AppRow): Promise<string> {
  return (await findOrganization(ctx.db, app.organization_id))?.timezone || 'UTC';
}

function checkInput(input: CampaignInput, errors: FieldError[]): void {
  const at = (field: string, message: string) => errors.push({ path: `/body/${field}`, message });
  if ((input.message === undefined) === (input.prompt === undefined)) {
    if (input.message === undefined) at('message', 'is required when prompt is absent');
    else at('prompt', 'must be absent when message is given');
  }
  if (input.audience_id !== undefined && input.audience_prompt !== undefined)
    at('audience_prompt', 'must be absent when audience_id is given');
  const type = input.schedule_type;
  const onlyFor = (field: keyof CampaignInput, types: string[], what: string) => {
    if (input[field] !== undefined && !types.includes(type)) at(field, `is only used by ${what} campaigns`);
  };
  onlyFor('recurrence', ['recurring'], 'recurring');
  onlyFor('inactivity_days', ['slipping_away'], 'slipping_away');
  onlyFor('trigger_event_name', ['trigger'], 'trigger');
  onlyFor('trigger_event_prompt', ['trigger'], 'trigger');
  onlyFor('trigger_cooldown_hours', ['trigger'], 'trigger');
  if (type === 'now' && input.scheduled_at !== undefined)
    at('scheduled_at', 'must be absent for now (it sends at once)');
  if (type === 'scheduled' && input.scheduled_at === undefined)
    at('scheduled_at', 'is required for scheduled campaigns');
  if (type === 'recurring') {
    if (input.recurrence === undefined && input.scheduled_at === undefined)
      at('recurrence', 'is required for recurring campaigns unless scheduled_at gives the daily time');
    if (input.recurrence !== undefined) {
      const problem = cronProblem(input.recurrence);
      if (problem) at('recurrence', problem);
    }
  }
  if (type === 'trigger' && (input.trigger_event_name === undefined) === (input.trigger_event_prompt === undefined)) {
    if (input.trigger_event_name === undefined)
      at('trigger_event_name', 'is required for trigger campaigns unless trigger_event_prompt is given');
    else at('trigger_event_prompt', 'must be absent when trigger_event_name is given');
  }
}

/** Who creates a campaign: the admin API and the CLI, or an AI client's MCP key. */
export interface CampaignCreator {
  kind: 'admin' | 'mcp';
  key_id: string | null;
  key_name: string | null;
  /** Who the audit trail names (the admin token used); by default the MCP key, or `admin`. */
  actor?: Actor;
}

/** The creator of a campaign made through the admin API with the given admin token. */
export const adminCreator = (actor: Actor): CampaignCreator => ({ ...ADMIN_CREATOR, actor });

const creatorActor = (c: CampaignCreator): Actor =>
  c.actor ?? { kind: c.kind, id: c.key_id ?? 'admin', label: c.key_name };

export const ADMIN_CREATOR: CampaignCreator = Object.freeze({ kind: 'admin', key_id: null, key_name: null });

export interface CreatedCampaign {
  campaign: CampaignRow;
  audience: { id: string; user_count: number; auto_created: boolean } | null;
  trigger: { event_name: string; match_method: 'exact' | 'fuzzy' | 'llm'; available_events_count: number } | null;
  /** The first send (for recurring campaigns the first run), or null when it starts at once. */
  firstRunAt: Date | null;
}

/**
 * A campaign checked and resolved but not stored: its audience (an existing one, or one read from
 * `audience_prompt` and counted), its trigger event and its first run. Nothing is written until
 * `commitCampaign`, so a confirmation can be asked in between.
 */
export interface CampaignPlan {
  app: AppRow;
  input: CampaignInput;
  creator: CampaignCreator;
  audience: { existing: NonNullable<CreatedCampaign['audience']> } | { draft: AudienceDraft } | null;
  trigger: CreatedCampaign['trigger'];
  timeZone: string;
  /** The first run as of when the plan was made (commitCampaign works it out again as of its own time). */
  nextRunAt: Date;
}

/** When the campaign first runs, and its recurrence; campaigns from MCP keys follow their own rules. */
function firstRun(plan: Pick<CampaignPlan, 'input' | 'creator'>, ctx: ServiceContext, now: Date, timeZone: string) {
  const { input } = plan;
  const fromMcp = plan.creator.kind === 'mcp';
  const earliest = fromMcp ? mcpEarliestStart(input, now, ctx.config.mcpCampaignLeadMinutes) : now;
  const scheduledAt = input.scheduled_at ? new Date(input.scheduled_at) : null;
  let recurrence = input.recurrence ?? null;
  let nextRunAt: Date;
  if (input.schedule_type === 'now') nextRunAt = now;
  else if (input.schedule_type === 'recurring') {
    recurrence ??= dailyAt(scheduledAt!, timeZone);
    const start = scheduledAt && scheduledAt > earliest ? scheduledAt : earliest;
    nextRunAt = nextCronRun(recurrence, new Date(start.getTime() - 1), timeZone);
    if (fromMcp) mcpRecurrenceAllowed(recurrence, nextRunAt, timeZone);
  } else nextRunAt = scheduledAt ?? earliest;
  return { scheduledAt, recurrence, nextRunAt };
}

/**
 * Checks a new campaign and resolves its audience, trigger and first run, without storing
 * anything. A campaign from an MCP key is refused when the app does not allow those (403
 * MCP_CAMPAIGNS_DISABLED) and follows the lead-time and interval rules of campaign-mcp-rules.ts.
 */
export async function planCampaign(
  ctx: ServiceContext,
  app: AppRow,
  input: CampaignInput,
  creator: CampaignCreator = ADMIN_CREATOR,
): Promise<CampaignPlan> {
  if (creator.kind === 'mcp') mcpCampaignsAllowed(app);
  const errors: FieldError[] = [];
  checkInput(input, errors);
  refuseIfAny(errors, 'campaign');
  const timeZone = await appTimeZone(ctx, app);
  const { nextRunAt } = firstRun({ input, creator }, ctx, ctx.clock(), timeZone);
  let audience: CampaignPlan['audience'] = null;
  if (input.audience_id !== undefined) {
    const found = await findAppAudience(ctx, app.id, input.audience_id);
    if (!found) throw new NotFoundError(`No audience with id ${input.audience_id} in this app.`);
    audience = { existing: { id: found.id, user_count: Number(found.user_count), auto_created: false } };
  }
  const trigger =
    input.schedule_type === 'trigger'
      ? await matchTriggerEvent(ctx, app.id, input.trigger_event_name, input.trigger_event_prompt)
      : null;
  if (input.audience_prompt !== undefined) {
    const name = `${input.name} (campaign audience)`.slice(0, 255);
    const criteria = input.audience_prompt;
    audience = { draft: await draftAudience(ctx, app.id, { name, description: criteria, criteria }) };
  }
  return { app, input, creator, audience, trigger, timeZone, nextRunAt };
}

/**
 * Stores a planned campaign, its new audience (if any) and its audit entry, in one transaction.
 * The first run is worked out again as of now, so time spent between plan and commit (a person
 * confirming) never brings an MCP campaign's first send closer than the lead time.
 */
export async function commitCampaign(ctx: ServiceContext, plan: CampaignPlan): Promise<CreatedCampaign> {
  const { app, input, creator, trigger } = plan;
  const now = ctx.clock();
  const schedule = firstRun({ input, creator }, ctx, now, plan.timeZone);
  const { campaign, audience } = await inTransaction(ctx.db, async (tx) => {
    let audience: CreatedCampaign['audience'] = null;
    if (plan.audience && 'existing' in plan.audience) audience = plan.audience.existing;
    if (plan.audience && 'draft' in plan.audience) {
      const stored = await storeAudience(ctx, tx, plan.audience.draft);
      audience = { id: stored.audience.id, user_count: stored.userCount, auto_created: true };
    }
    const campaign = await insertCampaign(tx, {
      id: uuidv7(now.getTime()),
      app_id: app.id,
      name: input.name,
      title: input.title,
      message: input.message ?? null,
      prompt: input.prompt ?? null,
      max_characters: input.max_characters ?? (input.prompt !== undefined ? DEFAULT_PROMPT_CHARACTERS : null),
      action_url: input.action_url ?? null,
      audience_id: audience?.id ?? null,
      audience_auto_created: audience?.auto_created ?? false,
      schedule_type: input.schedule_type,
      scheduled_at: schedule.scheduledAt,
      recurrence: schedule.recurrence,
      inactivity_days:
        input.schedule_type === 'slipping_away' ? (input.inactivity_days ?? DEFAULT_INACTIVITY_DAYS) : null,
      trigger_event_name: trigger?.event_name ?? null,
      trigger_cooldown_hours:
        input.schedule_type === 'trigger' ? (input.trigger_cooldown_hours ?? DEFAULT_COOLDOWN_HOURS) : null,
      match_method: trigger?.match_method ?? null,
      available_events_count: trigger?.available_events_count ?? null,
      status: 'scheduled',
      paused_from: null,
      next_run_at: schedule.nextRunAt,
      first_sent_at: null,
      completed_at: null,
      created_by_kind: creator.kind,
      created_by_key_id: creator.key_id,
      created_by_key_name: creator.key_name,
      created_at: now,
      updated_at: now,
    });
    await recordAppAction(tx, {
      appId: app.id,
      action: 'campaign.create',
      actor: creatorActor(creator),
      at: now,
      campaignId: campaign.id,
      details: { name: campaign.name, schedule_type: campaign.schedule_type, audience_id: campaign.audience_id },
    });
    return { campaign, audience };
  });
  if (campaign.schedule_type === 'trigger') ctx.triggerCampaigns.forget(app.id);
  ctx.logger.info(
    { app_id: app.id, campaign_id: campaign.id, type: campaign.schedule_type, created_by: creator.kind },
    'campaign created',
  );
  const firstRunAt = schedule.nextRunAt > now ? schedule.nextRunAt : null;
  return { campaign, audience, trigger, firstRunAt };
}

/** Creates a campaign in the app; every new campaign is `scheduled`. */
export async function createCampaign(
  ctx: ServiceContext,
  app: AppRow,
  input: CampaignInput,
  creator: CampaignCreator = ADMIN_CREATOR,
): Promise<CreatedCampaign> {
  return commitCampaign(ctx, await planCampaign(ctx, app, input, creator));
}

/** The app's campaigns, newest first, with their counters. */
export async function campaignsOf(
  ctx: ServiceContext,
  app: AppRow,
  filter: { status?: CampaignStatus; limit?: number } = {},
): Promise<{ rows: CampaignRow[]; counts: Map<string, CampaignCounts>; total: number }> {
  const rows = await listCampaigns(ctx.db, app.id, filter);
  const total = filter.limit === undefined ? rows.length : await countCampaigns(ctx.db, app.id, filter.status);
  const counts = await campaignCounts(
    ctx.db,
    app.id,
    rows.map((r) => r.id),
    app.conversion_events,
  );
  return { rows, counts, total };
}

/** A campaign of this app; 404 for an unknown id or another app's. */
export async function campaignOfApp(ctx: ServiceContext, appId: string, id: string): Promise<CampaignRow> {
  const row = isUuid(id) ? await findCampaign(ctx.db, appId, id) : undefined;
  if (!row) throw new NotFoundError(`No campaign with id ${id}.`);
  return row;
}

/** A campaign by id alone (admin API), with its app. */
export async function campaignById(ctx: ServiceContext, id: string): Promise<{ campaign: CampaignRow; app: AppRow }> {
  const campaign = isUuid(id) ? await findCampaignById(ctx.db, id) : undefined;
  const app = campaign ? await findApp(ctx.db, campaign.app_id) : undefined;
  if (!campaign || !app) throw new NotFoundError(`No campaign with id ${id}.`);
  return { campaign, app };
}

/** Pauses a scheduled or live campaign; 409 for one already sent or paused. */
export async function pauseCampaign(ctx: ServiceContext, id: string, actor: Actor): Promise<CampaignRow> {
  const { campaign } = await campaignById(ctx, id);
  if (campaign.status === 'sent') throw new ConflictError('This campaign was already sent; there is nothing to pause.');
  if (campaign.status === 'paused') throw new ConflictError('This campaign is already paused.');
  const now = ctx.clock();
  const moved = await moveAndRecord(ctx, 'campaign.pause', actor, campaign, [campaign.status], {
    status: 'paused',
    paused_from: campaign.status,
    updated_at: now,
  });
  if (moved.schedule_type === 'trigger') ctx.triggerCampaigns.forget(moved.app_id);
  return moved;
}

/** Moves a campaign from one of `from` and records the change in its app's audit trail, together; 409 when it moved meanwhile. */
async function moveAndRecord(
  ctx: ServiceContext,
  action: 'campaign.pause' | 'campaign.resume',
  actor: Actor,
  before: CampaignRow,
  from: CampaignRow['status'][],
  patch: Partial<CampaignRow>,
): Promise<CampaignRow> {
  const moved = await inTransaction(ctx.db, async (tx) => {
    const after = await moveCampaign(tx, before.app_id, before.id, from, patch);
    if (after) {
      await recordAppAction(tx, {
        appId: after.app_id,
        action,
        actor,
        at: ctx.clock(),
        campaignId: after.id,
        details: { from: before.status, to: after.status },
      });
    }
    return after;
  });
  if (!moved) throw new ConflictError('The campaign changed state meanwhile; read it again and retry.');
  return moved;
}

/** Resumes a paused campaign to the state it was in; 409 when it is not paused. */
export async function resumeCampaign(ctx: ServiceContext, id: string, actor: Actor): Promise<CampaignRow> {
  const { campaign, app } = await campaignById(ctx, id);
  if (campaign.status !== 'paused') throw new ConflictError(`This campaign is ${campaign.status}, not paused.`);
  const now = ctx.clock();
  const patch: Partial<CampaignRow> = {
    status: campaign.paused_from ?? 'scheduled',
    paused_from: null,
    updated_at: now,
  };
  // A recurring campaign skips the runs it missed while paused.
  if (
    campaign.schedule_type === 'recurring' &&
    campaign.recurrence &&
    campaign.next_run_at &&
    campaign.next_run_at < now
  )
    patch.next_run_at = nextCronRun(campaign.recurrence, now, await appTimeZone(ctx, app));
  const moved = await moveAndRecord(ctx, 'campaign.resume', actor, campaign, ['paused'], patch);
  if (moved.schedule_type === 'trigger') ctx.triggerCampaigns.forget(moved.app_id);
  return moved;
}

/** A campaign of one of the organization's apps (MCP), with its app; 404 otherwise. */
export async function organizationCampaign(
  ctx: ServiceContext,
  organizationId: string,
  id: string,
): Promise<{ campaign: CampaignRow; app: AppRow }> {
  const found = isUuid(id) ? await findCampaignById(ctx.db, id) : undefined;
  const app = found ? await findApp(ctx.db, found.app_id) : undefined;
  if (!found || !app || app.organization_id !== organizationId)
    throw new NotFoundError(`No campaign with id "${id}" is available to this key.`);
  return { campaign: found, app };
}

/** Counters of some of the app's campaigns. */
export const countsOf = (ctx: ServiceContext, app: AppRow, ids: string[]) =>
  campaignCounts(ctx.db, app.id, ids, app.conversion_events);

/** A user's erasure cancels their queued campaign sends (and unread trigger occurrences). */
export function registerCampaignErasure(hooks: ErasureHooks): void {
  hooks.register('campaign-sends', (tx, appId, userId) => cancelQueuedCampaignSends(tx, appId, userId));
}
