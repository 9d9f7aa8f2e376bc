// Sends a campaign occurrence's claimed sends: protections checked at send time (the user still
// exists and has not opted out, the per-user frequency cap across campaigns), text rendered per
// recipient ({{first_name}}-style placeholders from user properties, then max_characters), sends
// grouped by rendered text and, for providers that take many recipients per call (OneSignal,
// WonderPush), batched within their per-call limit behind one tracked batch link. Every delivery
// row is written `pending` (with its send marked done, in one transaction) before the provider is
// called; the call and its outcome are the delivery state machine's (engagement/push/attempts.ts),
// which leaves a delivery the provider may take later to the job runner.

import type { ServiceContext } from '../context.js';
import { uuidv7 } from '../ids.js';
import { inTransaction } from '../storage/handle.js';
import type { AppRow } from '../storage/tenancy.js';
import { attemptDelivery } from './push/attempts.js';
import type { PreparedProvider } from './push/providers.js';
import { clickLink, prepareProvider } from './push/send.js';
import {
  campaignPushesSince,
  finishSends,
  insertBatch,
  insertPendingDeliveries,
  linkSends,
  type PendingDelivery,
  type SendRow,
  type TargetUser,
  targetUsersById,
} from './queries/campaign-sends.js';
import type { CampaignRow } from './queries/campaigns.js';

const DAY_MS = 86_400_000;

/** Fills `{{key}}` placeholders from the user's properties (external id for `user_id`), then cuts. */
export function renderText(template: string, user: Pick<TargetUser, 'external_id' | 'properties'>, max: number | null) {
  const filled = template
    .replace(/\{\{\s*([A-Za-z0-9_.$-]{1,64})\s*\}\}/g, (_, key: string) => {
      const value = key === 'user_id' ? user.external_id : user.properties?.[key];
      return typeof value === 'string' || typeof value === 'number' ? String(value) : '';
    })
    .replace(/[ \t]+([,.!?;:])/g, '$1')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
  if (max === null) return filled;
  const chars = [...filled];
  if (chars.length <= max) return filled;
  return `${chars
    .slice(0, max - 1)
    .join('')
    .trimEnd()}…`;
}

interface Recipient {
  send: SendRow;
  user: TargetUser;
  text: string;
}

/** Sends one campaign's claimed sends (all `sending`); marks each done or skipped. */
export async function deliverSends(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  sends: SendRow[],
  linkBase: string,
): Promise<void> {
  const recipients = await recipientsOf(ctx, app, campaign, sends);
  if (recipients.length === 0) return;
  const prepared = await providerOrPostpone(ctx, app, campaign, recipients);
  if (!prepared) return;
  const byText = new Map<string, Recipient[]>();
  for (const r of recipients) byText.set(r.text, [...(byText.get(r.text) ?? []), r]);
  for (const [text, group] of byText) {
    const { provider } = prepared;
    if (provider.sendMany && provider.maxRecipientsPerCall) {
      for (let i = 0; i < group.length; i += provider.maxRecipientsPerCall) {
        await sendBatch(
          ctx,
          app,
          campaign,
          prepared,
          group.slice(i, i + provider.maxRecipientsPerCall),
          text,
          linkBase,
        );
      }
    } else {
      for (const r of group) await sendOne(ctx, app, campaign, prepared, r, linkBase);
    }
  }
}

/**
 * The sends that go out, with their text; skips those of users gone or opted out and those over
 * the app's daily frequency cap (one push per user per run).
 */
async function recipientsOf(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  sends: SendRow[],
): Promise<Recipient[]> {
  const now = ctx.clock();
  const users = new Map(
    (await targetUsersById(ctx.db, app.id, [...new Set(sends.map((s) => s.user_id))])).map((u) => [u.id, u]),
  );
  const gone = sends.filter((s) => !users.has(s.user_id));
  await finishSends(
    ctx.db,
    app.id,
    gone.map((s) => s.id),
    { status: 'skipped', reason: 'opted_out', updated_at: now },
  );
  const cap = app.push_frequency_cap_per_day;
  const counts = await campaignPushesSince(ctx.db, app.id, [...users.keys()], new Date(now.getTime() - DAY_MS));
  const recipients: Recipient[] = [];
  const capped: SendRow[] = [];
  const seen = new Set<string>();
  for (const send of sends) {
    const user = users.get(send.user_id);
    if (!user) continue;
    const n = counts.get(user.id) ?? 0;
    if (n >= cap || seen.has(user.id)) {
      capped.push(send);
      continue;
    }
    seen.add(user.id);
    counts.set(user.id, n + 1);
    recipients.push({
      send,
      user,
      text: renderText(send.message ?? campaign.message ?? '', user, campaign.max_characters),
    });
  }
  await finishSends(
    ctx.db,
    app.id,
    capped.map((s) => s.id),
    { status: 'skipped', reason: 'frequency_cap', updated_at: now },
  );
  return recipients;
}

/**
 * The app's provider, or null when there is none to send with: then the sends are skipped
 * (push_not_configured) or, when its secrets do not open here, queued again for five minutes on.
 */
async function providerOrPostpone(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  recipients: Recipient[],
): Promise<PreparedProvider | null> {
  const now = ctx.clock();
  try {
    return await prepareProvider(ctx, app);
  } catch (err) {
    ctx.logger.warn({ app_id: app.id, campaign_id: campaign.id, err: (err as Error).message }, 'campaign not sent');
    const ids = recipients.map((r) => r.send.id);
    if ((err as { code?: string }).code === 'PUSH_NOT_CONFIGURED') {
      await finishSends(ctx.db, app.id, ids, { status: 'skipped', reason: 'push_not_configured', updated_at: now });
    } else {
      // Secrets that do not open here (SECRET_KEY unset or changed): try again in five minutes,
      // on this instance once an operator fixed it, or on another one.
      const later = new Date(now.getTime() + 5 * 60_000);
      await finishSends(ctx.db, app.id, ids, { status: 'queued', not_before: later, updated_at: now });
    }
    return null;
  }
}

function pending(
  app: AppRow,
  campaign: CampaignRow,
  prepared: PreparedProvider,
  r: Recipient,
  at: Date,
  batchId: string | null,
): PendingDelivery {
  return {
    id: uuidv7(at.getTime()),
    app_id: app.id,
    user_id: r.user.id,
    campaign_id: campaign.id,
    batch_id: batchId,
    provider: prepared.row.provider,
    title: campaign.title,
    message: r.text,
    generated: campaign.prompt !== null,
    action_url: campaign.action_url,
    created_at: at,
  };
}

async function sendBatch(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  prepared: PreparedProvider,
  all: Recipient[],
  text: string,
  linkBase: string,
) {
  const at = ctx.clock();
  const batchId = uuidv7(at.getTime());
  const written = await writePending(ctx, app, campaign, prepared, all, at, batchId);
  if (written.length === 0) return;
  await attemptDelivery(ctx, {
    app,
    prepared,
    batchId,
    recipients: written.map((w) => ({ deliveryId: w.row.id, user: w.r.user })),
    title: campaign.title,
    message: text,
    actionUrl: campaign.action_url ? clickLink(linkBase, batchId) : undefined,
    attempt: 1,
    log: { campaign_id: campaign.id },
  });
}

async function sendOne(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  prepared: PreparedProvider,
  r: Recipient,
  linkBase: string,
) {
  const [written] = await writePending(ctx, app, campaign, prepared, [r], ctx.clock(), null);
  if (!written) return;
  const { row } = written;
  await attemptDelivery(ctx, {
    app,
    prepared,
    deliveryId: row.id,
    user: r.user,
    title: campaign.title,
    message: r.text,
    actionUrl: campaign.action_url ? clickLink(linkBase, row.id) : undefined,
    attempt: 1,
    log: { campaign_id: campaign.id },
  });
}

/**
 * In one transaction: links each send to its new delivery (a send already linked, taken twice
 * after the sweeper requeued it, is dropped), then writes the batch and the `pending` delivery
 * rows of the sends linked. The provider is called only after this commits: no push without a
 * record, and no record without its send marked done.
 */
async function writePending(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  prepared: PreparedProvider,
  group: Recipient[],
  at: Date,
  batchId: string | null,
): Promise<{ r: Recipient; row: PendingDelivery }[]> {
  const all = group.map((r) => ({ r, row: pending(app, campaign, prepared, r, at, batchId) }));
  return inTransaction(ctx.db, async (tx) => {
    const linked = await linkSends(
      tx,
      app.id,
      all.map((w) => ({ sendId: w.r.send.id, deliveryId: w.row.id })),
      at,
    );
    const kept = all.filter((w) => linked.has(w.r.send.id));
    if (kept.length === 0) return kept;
    if (batchId) {
      await insertBatch(tx, {
        id: batchId,
        app_id: app.id,
        campaign_id: campaign.id,
        action_url: campaign.action_url,
        size: kept.length,
        created_at: at,
      });
    }
    await insertPendingDeliveries(
      tx,
      kept.map((w) => w.row),
    );
    return kept;
  });
}
