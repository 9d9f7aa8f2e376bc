// The campaign engine, run by the job runner: due campaigns (one-shots at their time, recurring
// runs by cron in the organization's time zone, slipping-away scans), trigger occurrences from the
// outbox the event writer fills, and the queued sends (held by quiet hours or not yet sent). Each
// occurrence evaluates the audience at that moment, generates a prompt's text once, and claims one
// send per (campaign, user, occurrence) before anything is sent (services/campaign-delivery.ts).

import { uuidv7 } from '../ids.js';
import {
  claimSends,
  inactiveUsers,
  type SendRow,
  sentSince,
  type TargetUser,
  takeDueSends,
  targetUsers,
  targetUsersById,
} from '../storage/campaign-sends.js';
import {
  type CampaignRow,
  dueCampaigns,
  findCampaign,
  moveCampaign,
  type OutboxRow,
  takeOutbox,
} from '../storage/campaigns.js';
import { type Db, inTransaction } from '../storage/handle.js';
import { type AppRow, findApp } from '../storage/tenancy.js';
import { deliverSends } from './campaign-delivery.js';
import { nextCronRun, quietHoursEnd } from './campaign-schedule.js';
import { appTimeZone, DEFAULT_COOLDOWN_HOURS, DEFAULT_INACTIVITY_DAYS } from './campaigns.js';
import type { ServiceContext } from './context.js';
import { allMemberIds } from './mcp-audiences.js';
import { generateMessage } from './push.js';

/** How often a live slipping-away campaign looks for newly inactive users. */
export const SLIPPING_AWAY_SCAN_MS = 15 * 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

export interface CampaignEngine {
  ctx: ServiceContext;
  /** Base of tracked click links (PUBLIC_BASE_URL, else the server's own address). */
  linkBase(): string;
}

/** Runs every due campaign, then sends what is queued and due. */
export async function runDueCampaigns(engine: CampaignEngine): Promise<void> {
  const { ctx } = engine;
  for (const campaign of await dueCampaigns(ctx.db, ctx.clock(), 100)) {
    try {
      await runCampaign(engine, campaign);
    } catch (err) {
      ctx.logger.error({ err, campaign_id: campaign.id }, 'campaign run failed');
    }
  }
  await sendQueued(engine);
}

async function runCampaign(engine: CampaignEngine, c: CampaignRow): Promise<void> {
  const { ctx } = engine;
  const now = ctx.clock();
  const app = await findApp(ctx.db, c.app_id);
  if (!app) return;
  const timeZone = await appTimeZone(ctx, app);
  // The campaign's move and its occurrence's sends commit together (queueOccurrence): an instance
  // stopped in between leaves the campaign due, and another run claims it again.
  const claim =
    (patch: Partial<CampaignRow>) =>
    async (db: Db): Promise<boolean> =>
      (await moveCampaign(db, c.app_id, c.id, [c.status], { ...patch, updated_at: now }, c.next_run_at)) !== undefined;
  switch (c.schedule_type) {
    case 'now':
    case 'scheduled': {
      const users = await audienceUsers(ctx, app, c);
      await queueOccurrence(
        engine,
        app,
        c,
        timeZone,
        users.map((user) => ({ user, occurrence: 'once' })),
        claim({ status: 'sent', next_run_at: null, first_sent_at: now }),
      );
      return;
    }
    case 'recurring': {
      const next = nextCronRun(c.recurrence!, now, timeZone);
      const occurrence = `run:${c.next_run_at!.toISOString()}`;
      const users = await audienceUsers(ctx, app, c);
      await queueOccurrence(
        engine,
        app,
        c,
        timeZone,
        users.map((user) => ({ user, occurrence })),
        claim({ status: 'live', next_run_at: next, first_sent_at: c.first_sent_at ?? now }),
      );
      return;
    }
    case 'slipping_away': {
      if (!(await claim({ status: 'live', next_run_at: new Date(now.getTime() + SLIPPING_AWAY_SCAN_MS) })(ctx.db)))
        return;
      const days = c.inactivity_days ?? DEFAULT_INACTIVITY_DAYS;
      const inactive = await inactiveUsers(ctx.db, app.id, new Date(now.getTime() - days * DAY_MS));
      const users = await inAudience(ctx, app, c, inactive);
      // One send per inactive stretch: the stretch is named by the last activity it started from.
      await queueOccurrence(
        engine,
        app,
        c,
        timeZone,
        users.map((user) => ({ user, occurrence: `inactive-since:${user.last_active!.toISOString()}` })),
      );
      return;
    }
    case 'trigger':
      // Goes live at its start; its occurrences come from the trigger outbox.
      await claim({ status: 'live', next_run_at: null })(ctx.db);
      return;
  }
}

/** Every user of the campaign's audience (all users without one) who may receive campaign pushes. */
async function audienceUsers(ctx: ServiceContext, app: AppRow, c: CampaignRow): Promise<TargetUser[]> {
  if (!c.audience_id) return targetUsers(ctx.db, app.id);
  return targetUsers(ctx.db, app.id, await allMemberIds(ctx, app.id, c.audience_id));
}

async function inAudience(ctx: ServiceContext, app: AppRow, c: CampaignRow, users: TargetUser[]) {
  if (!c.audience_id || users.length === 0) return users;
  const members = new Set(await allMemberIds(ctx, app.id, c.audience_id));
  return users.filter((u) => members.has(u.external_id));
}

/**
 * Claims the occurrence's sends (the text generated once) and sends those not held by quiet hours.
 * `claimCampaign`, when given, moves the campaign in the same transaction; if another run moved it
 * first, nothing is claimed.
 */
async function queueOccurrence(
  engine: CampaignEngine,
  app: AppRow,
  c: CampaignRow,
  timeZone: string,
  targets: { user: TargetUser; occurrence: string }[],
  claimCampaign?: (db: Db) => Promise<boolean>,
): Promise<void> {
  const { ctx } = engine;
  if (targets.length === 0) {
    if (claimCampaign) await claimCampaign(ctx.db);
    return;
  }
  const now = ctx.clock();
  const message =
    c.prompt !== null ? await generateMessage(ctx, c.prompt, c.max_characters ?? 150, c.title) : (c.message ?? '');
  const notBefore = quietHoursEnd(now, app.push_quiet_hours, timeZone);
  const rows: SendRow[] = targets.map(({ user, occurrence }) => ({
    id: uuidv7(now.getTime()),
    app_id: app.id,
    campaign_id: c.id,
    user_id: user.id,
    occurrence,
    status: 'queued',
    reason: null,
    message,
    not_before: notBefore,
    delivery_id: null,
    created_at: now,
    updated_at: now,
  }));
  const claimed = await inTransaction(ctx.db, async (tx) => {
    if (claimCampaign && !(await claimCampaign(tx))) return null;
    return claimSends(tx, rows);
  });
  if (claimed === null) return;
  ctx.logger.info(
    { campaign_id: c.id, claimed: claimed.length, held_until: notBefore > now ? notBefore.toISOString() : undefined },
    'campaign occurrence queued',
  );
}

/** Sends every queued send that is due (quiet hours over), campaign by campaign. */
export async function sendQueued(engine: CampaignEngine): Promise<void> {
  const { ctx } = engine;
  for (;;) {
    const sends = await takeDueSends(ctx.db, ctx.clock(), 500);
    if (sends.length === 0) return;
    const byCampaign = new Map<string, SendRow[]>();
    for (const s of sends) byCampaign.set(s.campaign_id, [...(byCampaign.get(s.campaign_id) ?? []), s]);
    for (const group of byCampaign.values()) {
      const first = group[0]!;
      const [app, campaign] = await Promise.all([
        findApp(ctx.db, first.app_id),
        findCampaign(ctx.db, first.app_id, first.campaign_id),
      ]);
      if (!app || !campaign) continue;
      try {
        await deliverSends(ctx, app, campaign, group, engine.linkBase());
      } catch (err) {
        ctx.logger.error({ err, campaign_id: campaign.id }, 'campaign sends failed');
      }
    }
  }
}

/** Turns trigger outbox rows into occurrences (cooldown, audience), then sends. */
export async function runTriggers(engine: CampaignEngine): Promise<void> {
  const { ctx } = engine;
  for (;;) {
    const rows = await inTransaction(ctx.db, (tx) => takeOutbox(tx, 200));
    if (rows.length === 0) break;
    for (const row of rows) {
      try {
        await fire(engine, row);
      } catch (err) {
        ctx.logger.error({ err, campaign_id: row.campaign_id }, 'trigger occurrence failed');
      }
    }
  }
  await sendQueued(engine);
}

async function fire(engine: CampaignEngine, row: OutboxRow): Promise<void> {
  const { ctx } = engine;
  const now = ctx.clock();
  let c = await findCampaign(ctx.db, row.app_id, row.campaign_id);
  if (!c || (c.status !== 'live' && c.status !== 'scheduled')) return;
  if (row.received_at.getTime() - row.event_at.getTime() > HOUR_MS) return;
  if (c.status === 'scheduled') {
    if (!c.next_run_at || c.next_run_at > row.received_at) return; // not started when the event came
    c =
      (await moveCampaign(ctx.db, c.app_id, c.id, ['scheduled'], {
        status: 'live',
        next_run_at: null,
        updated_at: now,
      })) ?? c;
  }
  const cooldown = (c.trigger_cooldown_hours ?? DEFAULT_COOLDOWN_HOURS) * HOUR_MS;
  if (await sentSince(ctx.db, c.app_id, c.id, row.user_id, new Date(now.getTime() - cooldown))) return;
  const app = await findApp(ctx.db, c.app_id);
  if (!app) return;
  const users = await inAudience(ctx, app, c, await targetUsersById(ctx.db, app.id, [row.user_id]));
  await queueOccurrence(
    engine,
    app,
    c,
    await appTimeZone(ctx, app),
    users.map((user) => ({ user, occurrence: `event:${row.event_id}` })),
  );
}
