// What callers see of campaigns: the list entry, the detail (counters, rates in percent and
// performance, DESIGN §10) shared by the admin API, the MCP resources and get_campaign_status, and
// the REST "Get Campaign Status" body (rates as fractions) for a campaign or a /sendpush deliveryId.
import type { CampaignStatusResult, CampaignSummary, McpCampaignDetail } from '@tally/client';
import { findAppAudience } from '../audiences/members.js';
import type { ServiceContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { AppRow } from '../storage/tenancy.js';
import { appTimeZone, creatorOf } from './campaigns.js';
import { findDelivery } from './push/queries/push.js';
import { deliveryFigures, failedOccurrenceCount, peakDeliveryHour, queuedSendCount } from './queries/campaign-sends.js';
import { type CampaignCounts, type CampaignRow, campaignCounts, findCampaign } from './queries/campaigns.js';

const ZERO: CampaignCounts = { sent: 0, delivered: 0, clicked: 0, converted: 0 };

export function campaignSummary(c: CampaignRow, counts: CampaignCounts | undefined): CampaignSummary {
  return {
    id: c.id,
    name: c.name,
    title: c.title,
    status: c.status,
    schedule_type: c.schedule_type,
    trigger_event: c.trigger_event_name,
    audience_id: c.audience_id,
    created_at: c.created_at.toISOString(),
    stats: counts ?? ZERO,
  };
}

/** part / whole in percent with two decimals; 0 when whole is 0. */
export const percent = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 100 : 0);
/** part / whole as a fraction with four decimals; 0 when whole is 0. */
export const fraction = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : 0);

export async function campaignDetail(ctx: ServiceContext, app: AppRow, c: CampaignRow): Promise<McpCampaignDetail> {
  const counts = (await campaignCounts(ctx.db, app.id, [c.id], app.conversion_events)).get(c.id) ?? ZERO;
  const figures = await deliveryFigures(ctx.db, app.id, { campaignId: c.id });
  const timeZone = await appTimeZone(ctx, app);
  const peak = await peakDeliveryHour(ctx.db, app.id, c.id, timeZone);
  const audience = c.audience_id ? await findAppAudience(ctx, app.id, c.audience_id) : undefined;
  const audienceName = audience?.name ?? null;
  return {
    ...campaignSummary(c, counts),
    message: c.message,
    audience_name: audienceName,
    updated_at: c.updated_at.toISOString(),
    created_by: creatorOf(c),
    stats: {
      ...counts,
      delivery_rate: percent(counts.delivered, counts.sent),
      click_rate: percent(counts.clicked, counts.delivered),
      conversion_rate: percent(counts.converted, counts.delivered),
      failed_occurrences: await failedOccurrenceCount(ctx.db, app.id, c.id),
    },
    performance: {
      avg_delivery_time: figures.avg_delivery_seconds === null ? null : `${figures.avg_delivery_seconds.toFixed(1)}s`,
      peak_delivery_hour: peak === null ? null : `${String(peak).padStart(2, '0')}:00`,
      best_performing_segment: counts.sent > 0 ? (audienceName ?? 'all users') : null,
    },
    next_run_at: c.next_run_at ? c.next_run_at.toISOString() : null,
  };
}

/** GET /v1/notifications/campaigns/{id}: a campaign of the app, or one of its /sendpush deliveries. */
export async function campaignStatus(ctx: ServiceContext, app: AppRow, id: string): Promise<CampaignStatusResult> {
  if (!isUuid(id)) throw new NotFoundError(`No campaign or delivery with id ${id}.`);
  const campaign = await findCampaign(ctx.db, app.id, id);
  if (campaign) {
    const f = await deliveryFigures(ctx.db, app.id, { campaignId: id });
    const waiting = await queuedSendCount(ctx.db, app.id, id);
    const oneShot = campaign.schedule_type === 'now' || campaign.schedule_type === 'scheduled';
    const settled = campaign.status === 'sent' && waiting === 0 && f.pending === 0;
    const status =
      campaign.status === 'paused'
        ? 'cancelled'
        : campaign.status === 'scheduled'
          ? 'pending'
          : campaign.status === 'live' || !settled
            ? 'sending'
            : f.total > 0 && f.failed === f.total
              ? 'failed'
              : 'completed';
    return body(
      id,
      status,
      campaign.status,
      campaign.created_at,
      f,
      oneShot && settled ? (f.last_resolved_at ?? campaign.updated_at) : null,
      await failedOccurrenceCount(ctx.db, app.id, id),
    );
  }
  const delivery = await findDelivery(ctx.db, id);
  if (!delivery || delivery.app_id !== app.id || delivery.campaign_id !== null)
    throw new NotFoundError(`No campaign or delivery with id ${id}.`);
  const f = await deliveryFigures(ctx.db, app.id, { deliveryId: id });
  // a send waiting for its retry has nothing under way: pending until the job runner tries again
  const status =
    f.pending > 0 ? (delivery.next_attempt_at ? 'pending' : 'sending') : f.failed === f.total ? 'failed' : 'completed';
  return body(
    id,
    status,
    null,
    delivery.created_at,
    f,
    f.pending > 0 ? null : (f.last_resolved_at ?? delivery.created_at),
    0,
  );
}

function body(
  id: string,
  status: CampaignStatusResult['status'],
  campaignStatus: CampaignStatusResult['campaign_status'],
  createdAt: Date,
  f: Awaited<ReturnType<typeof deliveryFigures>>,
  completedAt: Date | null,
  failedOccurrences: number,
): CampaignStatusResult {
  return {
    success: true,
    campaign_id: id,
    status,
    campaign_status: campaignStatus,
    created_at: createdAt.toISOString(),
    sent_at: f.first_at ? f.first_at.toISOString() : null,
    completed_at: completedAt ? completedAt.toISOString() : null,
    stats: {
      total_recipients: f.total,
      sent: f.sent,
      delivered: f.delivered,
      opened: f.clicked,
      clicked: f.clicked,
      failed: f.failed,
      pending: f.pending,
      unknown: f.unknown,
      no_device: f.no_device,
      subscription_gone: f.subscription_gone,
      failed_occurrences: failedOccurrences,
    },
    rates: {
      delivery_rate: fraction(f.delivered, f.sent),
      open_rate: fraction(f.clicked, f.delivered),
      click_rate: fraction(f.clicked, f.delivered),
    },
  };
}
