// query_events: an app's raw events, newest first, as GET /mcp/events.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { searchAppEvents } from '../../analytics/event-search.js';
import { eventPageView } from '../../analytics/views.js';
import { appIdArgument, DATA_DISCLAIMER, defineTool, jsonValue } from '../tool.js';

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD');

export const queryEvents = defineTool({
  name: 'query_events',
  title: 'Look up events',
  description:
    "Lists an app's recorded events, newest first, with their properties: optionally only one event name, only one " +
    "user (their id or an alias), only the days from start_date to end_date (inclusive, in the organization's time " +
    'zone). Bot traffic is left out. One page at a time (limit 1-1000, default 100; offset to page on); pagination.has_more ' +
    'says whether there is more. For counts and trends, query_analytics answers faster.' +
    DATA_DISCLAIMER,
  input: {
    app_id: appIdArgument,
    event_name: z.string().max(255).optional().describe('Only events with this exact name.'),
    user_id: z.string().max(255).optional().describe("Only this user's events (their id or an alias)."),
    start_date: day.optional().describe('First day, YYYY-MM-DD (inclusive).'),
    end_date: day.optional().describe('Last day, YYYY-MM-DD (inclusive).'),
    limit: z.number().int().min(1).max(1000).default(100).describe('Events per page (1-1000, default 100).'),
    offset: z.number().int().min(0).default(0).describe('Events to skip (default 0).'),
  },
  output: {
    events: z.array(
      z.object({
        id: z.string(),
        app_id: z.string(),
        user_id: z.string(),
        event_name: z.string(),
        properties: z.record(z.string(), jsonValue()),
        created_at: z.string(),
      }),
    ),
    pagination: z.object({ total: z.number(), limit: z.number(), offset: z.number(), has_more: z.boolean() }),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: false,
  async run(args, { ctx, principal }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    const page = await searchAppEvents(ctx, app, {
      eventName: args.event_name,
      userId: args.user_id,
      startDate: args.start_date,
      endDate: args.end_date,
      limit: args.limit ?? 100,
      offset: args.offset ?? 0,
    });
    return eventPageView(page);
  },
  summary: (r) =>
    `${r.events.length} of ${r.pagination.total} events${r.pagination.has_more ? ' (more with a higher offset)' : ''}.`,
});
