// get_metrics: one of the seven metrics as a series, the same body as GET /v1/analytics/metrics.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { appMetric } from '../../analytics/metrics.js';
import { metricSeriesView } from '../../analytics/views.js';
import { appIdArgument, defineTool } from '../tool.js';

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD');

export const getMetrics = defineTool({
  name: 'get_metrics',
  title: 'Get a metric',
  description:
    'Returns one pre-computed metric of an app as a time series, exactly as the REST endpoint GET /v1/analytics/metrics does: ' +
    'dau (distinct active users), mau (distinct users active in the 30 days ending at each bucket), retention (percent of the ' +
    "bucket's new users active again in the next bucket), revenue (sum of the revenue property, else amount), arpu (revenue per " +
    'active user), conversion (percent of active users who did a conversion event) or churn (percent of the previous ' +
    "bucket's active users not active in this one). Buckets are in the organization's time zone; dates are inclusive days; " +
    'without dates the 30 days ending today are used. Percentages are 0-100 with two decimals.',
  input: {
    app_id: appIdArgument,
    metric: z.enum(['dau', 'mau', 'retention', 'revenue', 'arpu', 'conversion', 'churn']).describe('The metric.'),
    start_date: day.optional().describe('First day, YYYY-MM-DD (inclusive).'),
    end_date: day.optional().describe('Last day, YYYY-MM-DD (inclusive).'),
    granularity: z.enum(['hour', 'day', 'week', 'month']).default('day').describe('Bucket size (default day).'),
  },
  output: {
    success: z.literal(true),
    metric: z.string(),
    data: z.array(z.object({ date: z.string(), value: z.number() })),
    metadata: z.object({ app_id: z.string(), start_date: z.string(), end_date: z.string(), granularity: z.string() }),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: false,
  async run(args, { ctx, principal }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    return metricSeriesView(
      await appMetric(ctx, app, {
        metric: args.metric,
        startDate: args.start_date,
        endDate: args.end_date,
        granularity: args.granularity,
      }),
    );
  },
  summary: (r) =>
    `${r.metric} from ${r.metadata.start_date} to ${r.metadata.end_date} by ${r.metadata.granularity}: ${r.data.length} buckets.`,
});
