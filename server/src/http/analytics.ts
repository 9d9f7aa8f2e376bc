// POST /v1/analytics/query and GET /v1/analytics/metrics.

import { appMetric } from '../analytics/metrics.js';
import { answerQuery, toCsv } from '../analytics/query.js';
import { metricSeriesView, queryResultView } from '../analytics/views.js';
import type { ServiceContext } from '../context.js';
import { requireApp, restPrincipal } from './context.js';
import { type Handlers, reply } from './operations.js';

export function analyticsHandlers(ctx: ServiceContext): Handlers<'Analytics_query' | 'Analytics_metrics'> {
  return {
    Analytics_query: async ({ body }, request) => {
      // The key's id: whose sandbox concurrency the query counts against.
      const owner = restPrincipal(request).keyId;
      const answer = await answerQuery(ctx, requireApp(request), body.query, { owner });
      if (body.format === 'csv') return reply.send('text/csv', toCsv(answer.columns, answer.rows));
      return queryResultView(answer);
    },
    Analytics_metrics: async ({ query }, request) =>
      metricSeriesView(
        await appMetric(ctx, requireApp(request), {
          metric: query.metric,
          startDate: query.start_date,
          endDate: query.end_date,
          granularity: query.granularity,
        }),
      ),
  };
}
