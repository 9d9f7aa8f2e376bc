// POST /v1/analytics/query and GET /v1/analytics/metrics.
import type { Request, Response } from 'express';
import { computeMetric, type MetricName } from '../analytics/metrics.js';
import { answerQuery, toCsv } from '../analytics/query.js';
import type { Unit } from '../analytics/time.js';
import type { ServiceContext } from '../services/context.js';
import { findOrganization } from '../storage/tenancy.js';
import { requestApp } from './access.js';

async function timeZoneOf(ctx: ServiceContext, organizationId: string): Promise<string> {
  return (await findOrganization(ctx.db, organizationId))?.timezone || 'UTC';
}

export function analyticsHandlers(ctx: ServiceContext) {
  return {
    Analytics_query: async (req: Request, res: Response) => {
      const app = requestApp(req);
      const { query, format } = req.body as { query: string; format?: 'json' | 'csv' };
      const answer = await answerQuery(ctx, app, query);
      if (format === 'csv') {
        res.type('text/csv').send(toCsv(answer.columns, answer.rows));
        return;
      }
      res.json({
        success: true,
        data: answer.rows,
        query_time_ms: answer.queryTimeMs,
        rows_returned: answer.rows.length,
        sql: answer.sql,
        query_method: answer.method,
        interpretation: answer.interpretation,
        truncated: answer.truncated,
      });
    },
    Analytics_metrics: async (req: Request, res: Response) => {
      const app = requestApp(req);
      const q = req.query as { metric: MetricName; start_date?: string; end_date?: string; granularity: Unit };
      const series = await computeMetric(ctx, {
        appId: app.id,
        metric: q.metric,
        startDate: q.start_date,
        endDate: q.end_date,
        granularity: q.granularity ?? 'day',
        timeZone: await timeZoneOf(ctx, app.organization_id),
        conversionEvents: app.conversion_events ?? [],
      });
      res.json({
        success: true,
        metric: q.metric,
        data: series.points,
        metadata: {
          app_id: app.id,
          start_date: series.startDate,
          end_date: series.endDate,
          granularity: q.granularity ?? 'day',
        },
      });
    },
  };
}
