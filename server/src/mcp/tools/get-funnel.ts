// get_funnel: how many users go through a sequence of events, as GET /mcp/analytics/funnels.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { measureFunnel } from '../../analytics/funnels.js';
import { funnelView } from '../../analytics/views.js';
import { appIdArgument, DATA_DISCLAIMER, defineTool, textOrNull } from '../tool.js';

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'a date as YYYY-MM-DD');

export const getFunnel = defineTool({
  name: 'get_funnel',
  title: 'Measure a funnel',
  description:
    'Measures a funnel: of the users who did the first event in the period, how many then did each next event, in order, ' +
    "within time_window days of their first step (whole days, default 7). Returns each step's users, conversion and " +
    'drop-off (percent of the previous step), the overall conversion, the step with the biggest drop-off and a ' +
    "recommendation written from the figures. Dates are inclusive days in the organization's time zone (default: the 30 " +
    'days ending today). Use exact event names (list_event_dictionary).' +
    DATA_DISCLAIMER,
  input: {
    app_id: appIdArgument,
    events: z.array(z.string().min(1).max(255)).min(2).max(10).describe('The steps, 2 to 10 event names in order.'),
    start_date: day.optional().describe('First day, YYYY-MM-DD (inclusive).'),
    end_date: day.optional().describe('Last day, YYYY-MM-DD (inclusive).'),
    time_window: z.number().int().min(1).max(365).default(7).describe('Days allowed from the first step (default 7).'),
  },
  output: {
    app_id: z.string(),
    funnel: z.object({ events: z.array(z.string()), time_window: z.number() }),
    steps: z.array(
      z.object({
        event: z.string(),
        users: z.number(),
        conversion_rate: z.number(),
        dropoff_rate: z.number().optional(),
      }),
    ),
    overall_conversion: z.number(),
    analysis: z.object({
      biggest_dropoff: textOrNull('The event of the step that loses the most users; null when no step loses anyone.'),
      dropoff_percentage: z.number(),
      recommendation: z.string(),
    }),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: false,
  async run(args, { ctx, principal }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    const measured = await measureFunnel(ctx, app, {
      events: args.events,
      startDate: args.start_date,
      endDate: args.end_date,
      timeWindow: args.time_window,
    });
    return funnelView(app, measured);
  },
  summary: (r) =>
    `${r.steps.length} steps; ${r.overall_conversion}% of the users who started went through all of them.`,
});
