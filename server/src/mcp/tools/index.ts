// The tools the MCP server offers, in the order tools/list shows them.
import type { ToolDefinition } from '../tool.js';
import { createAudience } from './create-audience.js';
import { getAppVersions } from './get-app-versions.js';
import { getFunnel } from './get-funnel.js';
import { getMetrics } from './get-metrics.js';
import { listEventDictionary } from './list-event-dictionary.js';
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
] as unknown as ToolDefinition[];
