// get_campaign_status: one campaign's detail (counters, rates in percent, performance), like
// GET /mcp/resources/campaigns/{campaignId}.
import { z } from 'zod';
import { campaignReport } from '../../engagement/campaign-reports.js';
import { organizationCampaign } from '../../engagement/campaigns.js';
import { campaignDetailView } from '../../engagement/views.js';
import { DATA_DISCLAIMER, defineTool } from '../tool.js';
import { campaignDetailShape } from './campaign-schemas.js';

export const getCampaignStatus = defineTool({
  name: 'get_campaign_status',
  title: 'Get campaign status',
  description:
    'Returns one push campaign with its state, content, and delivery figures: sent, delivered, clicked, converted ' +
    '(a conversion event within 24 hours of the send), delivery_rate = delivered/sent, click_rate = clicked/delivered, ' +
    "conversion_rate = converted/delivered (percent, two decimals), and performance (average time to the provider's " +
    `answer, busiest send hour in the organization time zone, best-performing segment).${DATA_DISCLAIMER}`,
  input: {
    campaign_id: z
      .string()
      .min(1)
      .max(255)
      .describe('The campaign id (from create_push_campaign or list_push_campaigns).'),
  },
  output: campaignDetailShape,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: false,
  async run(args, { ctx, principal }) {
    const { campaign, app } = await organizationCampaign(ctx, principal.organizationId, args.campaign_id);
    return campaignDetailView(await campaignReport(ctx, app, campaign));
  },
  summary: (r) => `Campaign ${r.id} is ${r.status}: ${r.stats.sent} sent, ${r.stats.delivered} delivered.`,
});
