// The tools the MCP server offers, in the order tools/list shows them.
import type { ToolDefinition } from '../tool.js';
import { createAudience } from './create-audience.js';
import { getMetrics } from './get-metrics.js';
import { listEventDictionary } from './list-event-dictionary.js';
import { queryAnalytics } from './query-analytics.js';
import { updateEventDefinition } from './update-event-definition.js';

export const TOOLS: readonly ToolDefinition[] = [
  queryAnalytics,
  getMetrics,
  createAudience,
  listEventDictionary,
  updateEventDefinition,
] as unknown as ToolDefinition[];
