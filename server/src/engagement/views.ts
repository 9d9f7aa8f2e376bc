// What callers see of campaigns and push, each body built once here and typed with the contract:
// a new campaign (admin API and create_push_campaign), the list entry and the lists (admin API, GET
// /mcp/resources/campaigns and list_push_campaigns), the detail with rates in percent and
// performance (admin API, the MCP campaign GET and resource, get_campaign_status), the REST status
// of a campaign or a /sendpush delivery (rates as fractions), a push sent, and the push provider.
import type {
  CampaignCreated,
  CampaignCreator,
  CampaignStatusResult,
  CampaignSummary,
  McpCampaignDetail,
  McpCampaignList,
  PushProviderConfig,
  SendPushResult,
} from '@tally/client';
import type { AppRow } from '../storage/tenancy.js';
import { type CampaignReport, type DeliveryStatusReport, NO_COUNTS } from './campaign-reports.js';
import { ADMIN_CREATOR, type CreatedCampaign } from './campaigns.js';
import type { PushProviderRow } from './push/queries/push.js';
import type { SendResult } from './push/send.js';
import type { CampaignCounts, CampaignRow } from './queries/campaigns.js';

/** part / whole in percent with two decimals; 0 when whole is 0. */
const percent = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 100 : 0);
/** part / whole as a fraction with four decimals; 0 when whole is 0. */
const fraction = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : 0);
const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Who created a campaign, or null when it was created before Tally recorded it. */
export function creatorView(c: CampaignRow): CampaignCreator | null {
  if (!c.created_by_kind) return null;
  return { kind: c.created_by_kind, key_id: c.created_by_key_id, key_name: c.created_by_key_name };
}

/** A new campaign, as every surface returns it (the admin API adds its `success` flag). */
export function createdCampaignView(created: CreatedCampaign): Omit<CampaignCreated, 'success'> {
  const { campaign } = created;
  return {
    campaign_id: campaign.id,
    name: campaign.name,
    status: campaign.status,
    audience: created.audience,
    trigger: created.trigger,
    scheduled_at: iso(created.firstRunAt),
    created_by: creatorView(campaign) ?? ADMIN_CREATOR,
  };
}

export function campaignSummaryView(c: CampaignRow, counts: CampaignCounts | undefined): CampaignSummary {
  return {
    id: c.id,
    name: c.name,
    title: c.title,
    status: c.status,
    schedule_type: c.schedule_type,
    trigger_event: c.trigger_event_name,
    audience_id: c.audience_id,
    created_at: c.created_at.toISOString(),
    stats: counts ?? NO_COUNTS,
  };
}

/** GET /mcp/resources/campaigns and list_push_campaigns: a page of the app's campaigns. */
export const campaignListView = (
  app: AppRow,
  list: { rows: CampaignRow[]; counts: Map<string, CampaignCounts>; total: number },
): McpCampaignList => ({
  app_id: app.id,
  campaigns: list.rows.map((r) => campaignSummaryView(r, list.counts.get(r.id))),
  total: list.total,
});

export function campaignDetailView(report: CampaignReport): McpCampaignDetail {
  const { campaign: c, counts, audienceName } = report;
  return {
    ...campaignSummaryView(c, counts),
    message: c.message,
    audience_name: audienceName,
    updated_at: c.updated_at.toISOString(),
    created_by: creatorView(c),
    stats: {
      ...counts,
      delivery_rate: percent(counts.delivered, counts.sent),
      click_rate: percent(counts.clicked, counts.delivered),
      conversion_rate: percent(counts.converted, counts.delivered),
      failed_occurrences: report.failedOccurrences,
    },
    performance: {
      avg_delivery_time: report.avgDeliverySeconds === null ? null : `${report.avgDeliverySeconds.toFixed(1)}s`,
      peak_delivery_hour: report.peakHour === null ? null : `${String(report.peakHour).padStart(2, '0')}:00`,
      best_performing_segment: counts.sent > 0 ? (audienceName ?? 'all users') : null,
    },
    next_run_at: iso(c.next_run_at),
  };
}

/** GET /v1/notifications/campaigns/{id}: a campaign of the app, or one of its /sendpush deliveries. */
export function campaignStatusView(report: DeliveryStatusReport): CampaignStatusResult {
  const f = report.figures;
  return {
    success: true,
    campaign_id: report.id,
    status: report.status,
    campaign_status: report.campaignStatus,
    created_at: report.createdAt.toISOString(),
    sent_at: iso(f.first_at),
    completed_at: iso(report.completedAt),
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
      failed_occurrences: report.failedOccurrences,
    },
    rates: {
      delivery_rate: fraction(f.delivered, f.sent),
      open_rate: fraction(f.clicked, f.delivered),
      click_rate: fraction(f.clicked, f.delivered),
    },
  };
}

/** POST /v1/sendpush. */
export function pushSentView({ delivery, generatedMessage, retrying }: SendResult): SendPushResult {
  return {
    success: true,
    message: retrying
      ? `The ${retrying.provider} push provider could not take the notification yet (${retrying.status === null ? 'no answer' : `HTTP ${retrying.status}`}), so Tally is retrying it in the background. GET /v1/notifications/campaigns/${delivery.id} shows it pending until the provider takes it or the attempts end.`
      : delivery.status === 'delivered'
        ? 'Push notification accepted by the provider for delivery.'
        : 'Push notification sent to the provider.',
    deliveryId: delivery.id,
    recipientCount: delivery.recipients,
    ...(generatedMessage !== undefined ? { generatedMessage } : {}),
  };
}

/** An app's push provider, without its secrets. */
export function pushProviderView(row: PushProviderRow): PushProviderConfig {
  const s = row.settings;
  return {
    success: true,
    provider: row.provider,
    ...(s.base_url ? { base_url: s.base_url } : {}),
    ...(s.onesignal_app_id ? { onesignal_app_id: s.onesignal_app_id } : {}),
    ...(s.webhook_url ? { webhook_url: s.webhook_url } : {}),
    ...(s.vapid_subject ? { vapid_subject: s.vapid_subject } : {}),
    ...(s.vapid_public_key ? { webpush_public_key: s.vapid_public_key } : {}),
    configured_at: row.updated_at.toISOString(),
  };
}
