// Sends a campaign occurrence's claimed sends: protections checked at send time (the user still
// exists and has not opted out, the per-user frequency cap across campaigns), text rendered per
// recipient ({{first_name}}-style placeholders from user properties, then max_characters), sends
// grouped by rendered text and, for providers that take many recipients per call (OneSignal,
// WonderPush), batched within their per-call limit behind one tracked batch link. Every delivery
// row is written `pending` before the provider is called and resolved after its answer.
import { uuidv7 } from '../ids.js';
import { ProviderError } from '../push/provider.js';
import {
  campaignPushesSince,
  finishSends,
  insertBatch,
  insertPendingDeliveries,
  type PendingDelivery,
  resolveDeliveries,
  type SendRow,
  type TargetUser,
  targetUsersById,
} from '../storage/campaign-sends.js';
import type { CampaignRow } from '../storage/campaigns.js';
import type { AppRow } from '../storage/tenancy.js';
import type { ServiceContext } from './context.js';
import { clickLink, type PreparedProvider, prepareProvider } from './push.js';

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
  if (recipients.length === 0) return;
  let prepared: PreparedProvider;
  try {
    prepared = await prepareProvider(ctx, app);
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
    return;
  }
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

function failure(ctx: ServiceContext, prepared: PreparedProvider, err: unknown, campaignId: string): string {
  const f =
    err instanceof ProviderError
      ? err
      : new ProviderError(
          prepared.row.provider,
          null,
          `The ${prepared.row.provider} adapter failed: ${(err as Error)?.message ?? err}`,
        );
  ctx.logger.warn(
    {
      campaign_id: campaignId,
      provider: f.provider,
      status: f.status,
      reason: f.reason,
      ...(f.detail ? { provider_reply: f.detail } : {}),
    },
    'campaign push refused',
  );
  return `${f.status ?? 'no answer'}: ${f.reason}`;
}

async function sendBatch(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  prepared: PreparedProvider,
  group: Recipient[],
  text: string,
  linkBase: string,
) {
  const at = ctx.clock();
  const batchId = uuidv7(at.getTime());
  await insertBatch(ctx.db, {
    id: batchId,
    app_id: app.id,
    campaign_id: campaign.id,
    action_url: campaign.action_url,
    size: group.length,
    created_at: at,
  });
  const rows = group.map((r) => pending(app, campaign, prepared, r, at, batchId));
  await insertPendingDeliveries(ctx.db, rows);
  await linkSends(ctx, app, group, rows);
  const idOf = new Map(group.map((r, i) => [r.user.external_id, rows[i]!.id]));
  try {
    const result = await prepared.provider.sendMany!({
      app,
      users: group.map((r) => r.user),
      batchId,
      title: campaign.title,
      message: text,
      actionUrl: campaign.action_url ? clickLink(linkBase, batchId) : undefined,
    });
    const failed = new Set(result.failedExternalIds);
    const resolvedAt = ctx.clock();
    await resolveDeliveries(ctx.db, app.id, [...failed].map((x) => idOf.get(x)!).filter(Boolean), {
      status: 'failed',
      provider_message_id: result.providerMessageId,
      error: 'the provider could not target this user',
      recipients: 0,
      resolved_at: resolvedAt,
    });
    await resolveDeliveries(
      ctx.db,
      app.id,
      group.filter((r) => !failed.has(r.user.external_id)).map((r) => idOf.get(r.user.external_id)!),
      {
        status: result.delivered ? 'delivered' : 'sent',
        provider_message_id: result.providerMessageId,
        error: null,
        recipients: 1,
        resolved_at: resolvedAt,
      },
    );
  } catch (err) {
    await resolveDeliveries(
      ctx.db,
      app.id,
      rows.map((r) => r.id),
      {
        status: 'failed',
        provider_message_id: null,
        error: failure(ctx, prepared, err, campaign.id),
        recipients: 0,
        resolved_at: ctx.clock(),
      },
    );
  }
}

async function sendOne(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  prepared: PreparedProvider,
  r: Recipient,
  linkBase: string,
) {
  const at = ctx.clock();
  const row = pending(app, campaign, prepared, r, at, null);
  await insertPendingDeliveries(ctx.db, [row]);
  await linkSends(ctx, app, [r], [row]);
  try {
    const result = await prepared.provider.send({
      app,
      user: r.user,
      deliveryId: row.id,
      title: campaign.title,
      message: r.text,
      actionUrl: campaign.action_url ? clickLink(linkBase, row.id) : undefined,
    });
    await resolveDeliveries(ctx.db, app.id, [row.id], {
      status: result.delivered ? 'delivered' : 'sent',
      provider_message_id: result.providerMessageId,
      error: null,
      recipients: result.recipients,
      resolved_at: ctx.clock(),
    });
  } catch (err) {
    await resolveDeliveries(ctx.db, app.id, [row.id], {
      status: 'failed',
      provider_message_id: null,
      error: failure(ctx, prepared, err, campaign.id),
      recipients: 0,
      resolved_at: ctx.clock(),
    });
  }
}

async function linkSends(ctx: ServiceContext, app: AppRow, group: Recipient[], rows: PendingDelivery[]) {
  const at = ctx.clock();
  for (let i = 0; i < group.length; i++) {
    await finishSends(ctx.db, app.id, [group[i]!.send.id], {
      status: 'done',
      delivery_id: rows[i]!.id,
      updated_at: at,
    });
  }
}
