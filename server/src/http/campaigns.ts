// Campaign handlers: the admin API (create, list, get, pause, resume), the REST campaign status,
// and the MCP campaign GETs. Each calls the campaign services and returns engagement/views.ts's
// bodies (the admin API adds its `success` flag).
import { getApp } from '../admin/admin.js';
import type { ServiceContext } from '../context.js';
import { campaignReport, deliveryStatus } from '../engagement/campaign-reports.js';
import {
  adminCreator,
  campaignById,
  campaignsOf,
  countsOf,
  createCampaign,
  organizationCampaign,
  pauseCampaign,
  resumeCampaign,
} from '../engagement/campaigns.js';
import type { CampaignRow } from '../engagement/queries/campaigns.js';
import {
  campaignDetailView,
  campaignListView,
  campaignStatusView,
  campaignSummaryView,
  createdCampaignView,
} from '../engagement/views.js';
import { actorOf, mcpPrincipal, requireApp } from './context.js';
import { mcpApp } from './mcp-resources.js';
import type { Handlers } from './operations.js';

type CampaignOps =
  | 'AdminCampaigns_create'
  | 'AdminCampaigns_list'
  | 'AdminCampaigns_get'
  | 'AdminCampaigns_pause'
  | 'AdminCampaigns_resume'
  | 'Push_campaignStatus'
  | 'Mcp_listCampaigns'
  | 'Mcp_getCampaign';

export function campaignHandlers(ctx: ServiceContext): Handlers<CampaignOps> {
  const changed = async (row: CampaignRow) => {
    const { app } = await campaignById(ctx, row.id);
    const counts = await countsOf(ctx, app, [row.id]);
    return { success: true as const, ...campaignSummaryView(row, counts.get(row.id)) };
  };
  return {
    AdminCampaigns_create: async ({ body, path }, request) => ({
      success: true,
      ...createdCampaignView(
        await createCampaign(ctx, await getApp(ctx, path.app_id), body, adminCreator(actorOf(request))),
      ),
    }),
    AdminCampaigns_list: async ({ path }) => {
      const { rows, counts } = await campaignsOf(ctx, await getApp(ctx, path.app_id));
      return { success: true, items: rows.map((r) => campaignSummaryView(r, counts.get(r.id))) };
    },
    AdminCampaigns_get: async ({ path }) => {
      const { campaign, app } = await campaignById(ctx, path.campaign_id);
      return { success: true, ...campaignDetailView(await campaignReport(ctx, app, campaign)) };
    },
    AdminCampaigns_pause: async ({ path }, request) =>
      changed(await pauseCampaign(ctx, path.campaign_id, actorOf(request))),
    AdminCampaigns_resume: async ({ path }, request) =>
      changed(await resumeCampaign(ctx, path.campaign_id, actorOf(request))),
    Push_campaignStatus: async ({ path }, request) =>
      campaignStatusView(await deliveryStatus(ctx, requireApp(request), path.campaign_id)),
    Mcp_listCampaigns: async ({ query }, request) => {
      const app = await mcpApp(ctx, request);
      return campaignListView(app, await campaignsOf(ctx, app, { status: query.status, limit: query.limit ?? 50 }));
    },
    Mcp_getCampaign: async ({ path }, request) => {
      const { campaign, app } = await organizationCampaign(ctx, mcpPrincipal(request).organizationId, path.campaignId);
      return campaignDetailView(await campaignReport(ctx, app, campaign));
    },
  };
}
