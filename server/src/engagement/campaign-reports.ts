// The figures read for a campaign's detail (counters, delivery times, busiest hour, audience name,
// failed trigger occurrences) and for the REST status of a campaign or of a /sendpush delivery
// (where it stands, its delivery counts, when it finished). engagement/views.ts shapes them.
import type { CampaignStatusResult } from '@tally/client';
import { findAppAudience } from '../audiences/members.js';
import type { ServiceContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { AppRow } from '../storage/tenancy.js';
import { appTimeZone } from './campaigns.js';
import { findDelivery } from './push/queries/push.js';
import {
  type DeliveryFigures,
  deliveryFigures,
  failedOccurrenceCount,
  peakDeliveryHour,
  queuedSendCount,
} from './queries/campaign-sends.js';
import { type CampaignCounts, type CampaignRow, campaignCounts, findCampaign } from './queries/campaigns.js';

export const NO_COUNTS: CampaignCounts = Object.freeze({ sent: 0, delivered: 0, clicked: 0, converted: 0 });

export interface CampaignReport {
  campaign: CampaignRow;
  counts: CampaignCounts;
  avgDeliverySeconds: number | null;
  /** The busiest send hour (0-23) in the organization's time zone, or null before any send. */
  peakHour: number | null;
  audienceName: string | null;
  failedOccurrences: number;
}

export async function campaignReport(ctx: ServiceContext, app: AppRow, c: CampaignRow): Promise<CampaignReport> {
  const counts = (await campaignCounts(ctx.db, app.id, [c.id], app.conversion_events)).get(c.id) ?? NO_COUNTS;
  const figures = await deliveryFigures(ctx.db, app.id, { campaignId: c.id });
  const timeZone = await appTimeZone(ctx, app);
  const peakHour = await peakDeliveryHour(ctx.db, app.id, c.id, timeZone);
  const audience = c.audience_id ? await findAppAudience(ctx, app.id, c.audience_id) : undefined;
  return {
    campaign: c,
    counts,
    avgDeliverySeconds: figures.avg_delivery_seconds,
    peakHour,
    audienceName: audience?.name ?? null,
    failedOccurrences: await failedOccurrenceCount(ctx.db, app.id, c.id),
  };
}

/** Where a campaign or a /sendpush delivery stands (GET /v1/notifications/campaigns/{id}). */
export interface DeliveryStatusReport {
  id: string;
  status: CampaignStatusResult['status'];
  /** The campaign's own state; null for a /sendpush delivery. */
  campaignStatus: CampaignStatusResult['campaign_status'];
  createdAt: Date;
  figures: DeliveryFigures;
  completedAt: Date | null;
  failedOccurrences: number;
}

/** A campaign of the app, or one of its /sendpush deliveries; 404 for anything else. */
export async function deliveryStatus(ctx: ServiceContext, app: AppRow, id: string): Promise<DeliveryStatusReport> {
  if (!isUuid(id)) throw new NotFoundError(`No campaign or delivery with id ${id}.`);
  const campaign = await findCampaign(ctx.db, app.id, id);
  if (campaign) return campaignProgress(ctx, app, campaign, id);
  const delivery = await findDelivery(ctx.db, id);
  if (!delivery || delivery.app_id !== app.id || delivery.campaign_id !== null)
    throw new NotFoundError(`No campaign or delivery with id ${id}.`);
  const f = await deliveryFigures(ctx.db, app.id, { deliveryId: id });
  return {
    id,
    // a send waiting for its retry has nothing under way: pending until the job runner tries again
    status:
      f.pending > 0
        ? delivery.next_attempt_at
          ? 'pending'
          : 'sending'
        : f.failed === f.total
          ? 'failed'
          : 'completed',
    campaignStatus: null,
    createdAt: delivery.created_at,
    figures: f,
    completedAt: f.pending > 0 ? null : (f.last_resolved_at ?? delivery.created_at),
    failedOccurrences: 0,
  };
}

/** `id` as the caller wrote it (the status answers with it). */
async function campaignProgress(
  ctx: ServiceContext,
  app: AppRow,
  campaign: CampaignRow,
  id: string,
): Promise<DeliveryStatusReport> {
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
  return {
    id,
    status,
    campaignStatus: campaign.status,
    createdAt: campaign.created_at,
    figures: f,
    completedAt: oneShot && settled ? (f.last_resolved_at ?? campaign.updated_at) : null,
    failedOccurrences: await failedOccurrenceCount(ctx.db, app.id, id),
  };
}
