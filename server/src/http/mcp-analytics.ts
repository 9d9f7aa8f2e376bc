// MCP analytics GETs: engagement, one event's analytics and funnels. `app_id` is required and was
// resolved (within the key's organization) before these run.
import type { ServiceContext } from '../services/context.js';
import { engagement } from '../services/engagement.js';
import { eventAnalytics } from '../services/event-analytics.js';
import { funnel, funnelSteps } from '../services/funnels.js';
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
    Mcp_funnels: async ({ query }, request) => {
      const app = requireApp(request);
      const events = funnelSteps(query.events);
      const timeWindow = query.time_window ?? 7;
      const report = await funnel(ctx, app, {
        events,
        startDate: query.start_date,
        endDate: query.end_date,
        timeWindow,
      });
      return {
        app_id: app.id,
        funnel: { events, time_window: timeWindow },
        steps: report.steps,
        overall_conversion: report.overall_conversion,
        analysis: report.analysis,
      };
    },
  };
}
