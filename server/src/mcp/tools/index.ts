// The tools the MCP server offers, in the order tools/list shows them.
import type { ToolDefinition } from '../tool.js';
import { createAudience } from './create-audience.js';
import { createPushCampaign } from './create-push-campaign.js';
import { getAppVersions } from './get-app-versions.js';
import { getCampaignStatus } from './get-campaign-status.js';
import { getFunnel } from './get-funnel.js';
import { getMetrics } from './get-metrics.js';
import { listEventDictionary } from './list-event-dictionary.js';
import { listPushCampaigns } from './list-push-campaigns.js';
import { queryAnalytics } from './query-analytics.js';
import { queryEvents } from './query-events.js';
import { updateEventDefinition } from './update-event-definition.js';

export const TOOLS: readonly ToolDefinition[] = [
  queryAnalytics,
  getMetrics,
  getFunnel,
  queryEvents,
  listEventDictionary,
  updateEventDefinition,
  getAppVersions,
  createAudience,
  createPushCampaign,
  listPushCampaigns,
  getCampaignStatus,
] as unknown as ToolDefinition[];
