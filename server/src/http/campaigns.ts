// Campaign handlers: the admin API (create, list, get, pause, resume), the REST campaign status,
// and the MCP campaign GETs. Each calls the campaign services.
import { getApp } from '../admin/admin.js';
import type { ServiceContext } from '../context.js';
import { campaignDetail, campaignStatus, campaignSummary } from '../engagement/campaign-views.js';
import {
  campaignById,
  campaignsOf,
  countsOf,
  createCampaign,
  createdCampaignView,
  organizationCampaign,
  pauseCampaign,
  resumeCampaign,
} from '../engagement/campaigns.js';
import type { CampaignRow } from '../engagement/queries/campaigns.js';
import { mcpPrincipal, requireApp } from './context.js';
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
    return { success: true as const, ...campaignSummary(row, counts.get(row.id)) };
  };
  return {
    AdminCampaigns_create: async ({ body, path }) => ({
      success: true,
      ...createdCampaignView(await createCampaign(ctx, await getApp(ctx, path.app_id), body)),
    }),
    AdminCampaigns_list: async ({ path }) => {
      const { rows, counts } = await campaignsOf(ctx, await getApp(ctx, path.app_id));
      return { success: true, items: rows.map((r) => campaignSummary(r, counts.get(r.id))) };
    },
    AdminCampaigns_get: async ({ path }) => {
      const { campaign, app } = await campaignById(ctx, path.campaign_id);
      return { success: true, ...(await campaignDetail(ctx, app, campaign)) };
    },
    AdminCampaigns_pause: async ({ path }) => changed(await pauseCampaign(ctx, path.campaign_id)),
    AdminCampaigns_resume: async ({ path }) => changed(await resumeCampaign(ctx, path.campaign_id)),
    Push_campaignStatus: async ({ path }, request) => campaignStatus(ctx, requireApp(request), path.campaign_id),
    Mcp_listCampaigns: async ({ query }, request) => {
      const app = await mcpApp(ctx, request);
      const { rows, counts, total } = await campaignsOf(ctx, app, { status: query.status, limit: query.limit ?? 50 });
      return { app_id: app.id, campaigns: rows.map((r) => campaignSummary(r, counts.get(r.id))), total };
    },
    Mcp_getCampaign: async ({ path }, request) => {
      const { campaign, app } = await organizationCampaign(ctx, mcpPrincipal(request).organizationId, path.campaignId);
      return campaignDetail(ctx, app, campaign);
    },
  };
}
