// POST /v1/analytics/query and GET /v1/analytics/metrics.

import { timeZoneOf } from '../admin/organizations.js';
import { queryAnalytics } from '../analytics/answer.js';
import { computeMetric } from '../analytics/metrics.js';
import { toCsv } from '../analytics/query.js';
import type { ServiceContext } from '../context.js';
import { requireApp, restPrincipal } from './context.js';
import { type Handlers, reply } from './operations.js';

export function analyticsHandlers(ctx: ServiceContext): Handlers<'Analytics_query' | 'Analytics_metrics'> {
  return {
    Analytics_query: async ({ body }, request) => {
      const { answer, body: result } = await queryAnalytics(
        ctx,
        requireApp(request),
        body.query,
        restPrincipal(request).keyId,
      );
      if (body.format === 'csv') return reply.send('text/csv', toCsv(answer.columns, answer.rows));
      return result;
    },
    Analytics_metrics: async ({ query }, request) => {
      const app = requireApp(request);
      const granularity = query.granularity ?? 'day';
      const series = await computeMetric(ctx, {
        appId: app.id,
        metric: query.metric,
        startDate: query.start_date,
        endDate: query.end_date,
        granularity,
        timeZone: await timeZoneOf(ctx, app.organization_id),
        conversionEvents: app.conversion_events ?? [],
      });
      return {
        success: true,
        metric: query.metric,
        data: series.points,
        metadata: { app_id: app.id, start_date: series.startDate, end_date: series.endDate, granularity },
      };
    },
  };
}
