// MCP analytics GETs: engagement, one event's analytics and funnels. `app_id` is required and was
// resolved (within the key's organization) before these run.

import { engagement } from '../analytics/engagement.js';
import { eventAnalytics } from '../analytics/event-analytics.js';
import { funnelView } from '../analytics/funnels.js';
import type { ServiceContext } from '../context.js';
import { requireApp } from './context.js';
import type { Handlers } from './operations.js';

export function mcpAnalyticsHandlers(
  ctx: ServiceContext,
): Handlers<'Mcp_engagement' | 'Mcp_eventAnalytics' | 'Mcp_funnels'> {
  return {
    Mcp_engagement: async ({ query }, request) => {
      const app = requireApp(request);
      const report = await engagement(ctx, app, {
        startDate: query.start_date,
        endDate: query.end_date,
        segment: query.segment,
      });
      return { app_id: app.id, ...report };
    },
    Mcp_eventAnalytics: async ({ path, query }, request) => {
      const app = requireApp(request);
      const report = await eventAnalytics(ctx, app, path.eventName, {
        startDate: query.start_date,
        endDate: query.end_date,
        groupBy: query.group_by ?? 'day',
      });
      return { event_name: path.eventName, app_id: app.id, ...report };
    },
    Mcp_funnels: async ({ query }, request) =>
      funnelView(ctx, requireApp(request), {
        events: query.events,
        startDate: query.start_date,
        endDate: query.end_date,
        timeWindow: query.time_window,
      }),
  };
}
