// list_push_campaigns: an app's campaigns with delivery counters, like GET /mcp/resources/campaigns.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { campaignsOf } from '../../engagement/campaigns.js';
import { campaignListView } from '../../engagement/views.js';
import { appIdArgument, DATA_DISCLAIMER, defineTool } from '../tool.js';
import { campaignStatus, campaignSummary as summarySchema } from './campaign-schemas.js';

export const listPushCampaigns = defineTool({
  name: 'list_push_campaigns',
  title: 'List push campaigns',
  description:
    "Lists the app's push campaigns, newest first, with their state (scheduled, live, paused, sent), schedule type, " +
    'trigger event, audience and delivery counters (sent, delivered, clicked, converted). Use get_campaign_status for ' +
    `rates and performance of one campaign.${DATA_DISCLAIMER}`,
  input: {
    app_id: appIdArgument,
    status: campaignStatus.optional().describe('Only campaigns in this state.'),
    limit: z.number().int().min(1).max(500).default(50).describe('Most campaigns to return (default 50).'),
  },
  output: {
    app_id: z.string(),
    campaigns: z.array(summarySchema),
    total: z.number().describe('Campaigns matching the filter, before limit.'),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: false,
  async run(args, { ctx, principal }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    return campaignListView(app, await campaignsOf(ctx, app, { status: args.status, limit: args.limit ?? 50 }));
  },
  summary: (r) => `${r.campaigns.length} of ${r.total} campaign${r.total === 1 ? '' : 's'}.`,
});
