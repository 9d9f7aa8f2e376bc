// MCP analytics GETs: engagement, one event's analytics and funnels. `app_id` is required and was
// resolved (within the key's organization) before these run.

import { engagement } from '../analytics/engagement.js';
import { eventAnalytics } from '../analytics/event-analytics.js';
import { measureFunnel } from '../analytics/funnels.js';
import { engagementView, eventAnalyticsView, funnelView } from '../analytics/views.js';
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
      return engagementView(app, report);
    },
    Mcp_eventAnalytics: async ({ path, query }, request) => {
      const app = requireApp(request);
      const report = await eventAnalytics(ctx, app, path.eventName, {
        startDate: query.start_date,
        endDate: query.end_date,
        groupBy: query.group_by ?? 'day',
      });
      return eventAnalyticsView(app, path.eventName, report);
    },
    Mcp_funnels: async ({ query }, request) => {
      const app = requireApp(request);
      const measured = await measureFunnel(ctx, app, {
        events: query.events,
        startDate: query.start_date,
        endDate: query.end_date,
        timeWindow: query.time_window,
      });
      return funnelView(app, measured);
    },
  };
}
