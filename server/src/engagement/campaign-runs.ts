// The campaign engine, run by the job runner: due campaigns (one-shots at their time, recurring
// runs by cron in the organization's time zone, slipping-away scans) and the queued sends (held by
// quiet hours or not yet sent); trigger occurrences are in campaign-trigger-runs.ts. Each
// occurrence evaluates the audience at that moment, generates a prompt's text once, and claims one
// send per (campaign, user, occurrence) before anything is sent (engagement/campaign-delivery.ts).

import { allMemberIds } from '../audiences/members.js';
import type { ServiceContext } from '../context.js';
import { uuidv7 } from '../ids.js';
import { type Db, inTransaction } from '../storage/handle.js';
import { type AppRow, findApp } from '../storage/tenancy.js';
import { deliverSends } from './campaign-delivery.js';
import { nextCronRun, quietHoursEnd } from './campaign-schedule.js';
import { appTimeZone, DEFAULT_INACTIVITY_DAYS } from './campaigns.js';
import { generateMessage } from './push/send.js';
import {
  claimSends,
  inactiveUsers,
  type SendRow,
  type TargetUser,
  takeDueSends,
  targetUsers,
} from './queries/campaign-sends.js';
import { type CampaignRow, dueCampaigns, findCampaign, moveCampaign } from './queries/campaigns.js';

/** How often a live slipping-away campaign looks for newly inactive users. */
export const SLIPPING_AWAY_SCAN_MS = 15 * 60_000;
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
        { claim: claim({ status: 'sent', next_run_at: null, first_sent_at: now }) },
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
        { claim: claim({ status: 'live', next_run_at: next, first_sent_at: c.first_sent_at ?? now }) },
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

/** Those of `users` in the campaign's audience (all of them without one). */
export async function inAudience(ctx: ServiceContext, app: AppRow, c: CampaignRow, users: TargetUser[]) {
  if (!c.audience_id || users.length === 0) return users;
  const members = new Set(await allMemberIds(ctx, app.id, c.audience_id));
  return users.filter((u) => members.has(u.external_id));
}

/**
 * Claims the occurrence's sends (the text generated once, before the transaction: no transaction
 * stays open across a language-model call) and sends those not held by quiet hours. `claim`, when
 * given, runs in the claim's transaction (moves the campaign, or deletes the trigger occurrence
 * from the outbox); when it returns false, another worker got there first and nothing is claimed.
 * With `strictText`, a language-model failure is thrown instead of written around by the composer.
 */
export async function queueOccurrence(
  engine: CampaignEngine,
  app: AppRow,
  c: CampaignRow,
  timeZone: string,
  targets: { user: TargetUser; occurrence: string }[],
  options: { claim?: (db: Db) => Promise<boolean>; strictText?: boolean } = {},
): Promise<void> {
  const { ctx } = engine;
  const { claim } = options;
  if (targets.length === 0) {
    if (claim) await claim(ctx.db);
    return;
  }
  const now = ctx.clock();
  const message =
    c.prompt !== null
      ? await generateMessage(ctx, c.prompt, c.max_characters ?? 150, c.title, options.strictText)
      : (c.message ?? '');
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
    if (claim && !(await claim(tx))) return null;
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
