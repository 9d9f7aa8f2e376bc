// query_analytics: a question in plain words or one SQL SELECT, through the same engine and SQL
// sandbox as POST /v1/analytics/query, with the same result.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { answerQuery } from '../../analytics/query.js';
import { queryResultView } from '../../analytics/views.js';
import { appIdArgument, DATA_DISCLAIMER, defineTool, jsonValue } from '../tool.js';

export const queryAnalytics = defineTool({
  name: 'query_analytics',
  title: 'Ask an analytics question',
  description:
    'Answers a question about an app\'s events and users, asked in plain words ("daily active users last week", ' +
    '"top 5 events this month", "revenue by country in October") or as one SQL SELECT over the relations ' +
    'events(id, user_id, event_name, properties, created_at) and users(id, user_id, email, phone, properties, origin, ' +
    'created_at, last_active, event_count), already restricted to the app. Returns the rows, the SQL that ran, how the ' +
    'question was read (query_method: rules for the built-in engine, llm or llm_sql when a language model helped, sql for ' +
    'SQL) and one sentence saying what was computed over which period (interpretation). A question it cannot read is refused with the words it did not understand and suggestions.' +
    DATA_DISCLAIMER,
  input: {
    app_id: appIdArgument,
    query: z.string().min(1).max(20_000).describe('The question in plain words, or one SQL SELECT.'),
  },
  output: {
    success: z.literal(true),
    data: z.array(z.record(z.string(), jsonValue())).describe('The rows, one object per row keyed by column name.'),
    query_time_ms: z.number(),
    rows_returned: z.number(),
    sql: z
      .string()
      .optional()
      .describe('The SQL that ran; absent when the figures came from the daily activity rollup (no SQL ran).'),
    query_method: z.enum(['rules', 'llm', 'llm_sql', 'sql']),
    interpretation: z
      .string()
      .describe("What was computed, over which period (dates in the organization's time zone), in one sentence."),
    truncated: z.boolean().describe('True when the row cap cut the result short.'),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: false,
  async run(args, { ctx, principal, talk }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    // The key's id: whose sandbox concurrency the query counts against.
    const body = queryResultView(await answerQuery(ctx, app, args.query, { owner: principal.keyId }));
    await talk.log('debug', 'The SQL that answered the question.', { sql: body.sql, query_method: body.query_method });
    await talk.log('info', `The query ran in the SQL sandbox in ${body.query_time_ms} ms.`, {
      query_time_ms: body.query_time_ms,
      rows_returned: body.rows_returned,
      truncated: body.truncated,
    });
    return body;
  },
  summary: (r) =>
    `${r.rows_returned} row${r.rows_returned === 1 ? '' : 's'} (${r.query_method})${r.truncated ? ', truncated at the cap' : ''}.`,
});
