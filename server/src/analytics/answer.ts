// The answers of POST /v1/analytics/query and the MCP tool query_analytics, built once: the same
// question gives the same body on both surfaces.

import type { ServiceContext } from '../context.js';
import type { AppRow } from '../storage/tenancy.js';
import { answerQuery } from './query.js';

export async function queryAnalytics(
  ctx: ServiceContext,
  app: AppRow,
  query: string,
  /** Whose sandbox concurrency the query counts against (the API key's id). */
  owner: string,
) {
  const answer = await answerQuery(ctx, app, query, { owner });
  return {
    answer,
    body: {
      success: true as const,
      data: answer.rows,
      query_time_ms: answer.queryTimeMs,
      rows_returned: answer.rows.length,
      sql: answer.sql,
      query_method: answer.method,
      interpretation: answer.interpretation,
      truncated: answer.truncated,
    },
  };
}
