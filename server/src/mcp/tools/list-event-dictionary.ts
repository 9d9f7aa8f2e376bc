// list_event_dictionary: the events an app has tracked, with their definitions and volumes.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { eventDictionary } from '../../analytics/event-dictionary.js';
import { eventDictionaryView } from '../../analytics/views.js';
import { appIdArgument, DATA_DISCLAIMER, defineTool, textOrNull } from '../tool.js';

export const dictionaryEntry = z.object({
  id: z.string(),
  event_name: z.string(),
  display_name: textOrNull('A readable name, or null.'),
  description: textOrNull('What the event means, or null when it is not defined yet.'),
  category: textOrNull('A grouping such as "commerce", or null.'),
  archived: z.boolean(),
  defined: z.boolean(),
  first_seen: z.string(),
  last_seen: z.string(),
  volume_30d: z.number(),
  properties: z.record(z.string(), z.string()),
});

export const listEventDictionary = defineTool({
  name: 'list_event_dictionary',
  title: 'List tracked events',
  description:
    'Lists the events an app has tracked: each event name with its display name, description, category, whether it is ' +
    'archived, whether it is defined (has a description), when it was first and last seen, how many times it occurred in ' +
    'the last 30 days, and notes on its properties. Use it to learn the exact event names before asking questions or ' +
    'creating audiences and campaigns. Most recently seen first.' +
    DATA_DISCLAIMER,
  input: {
    app_id: appIdArgument,
    include_archived: z.boolean().default(false).describe('Include archived events (default false).'),
    only_undefined: z.boolean().default(false).describe('Only events without a description yet (default false).'),
    search: z.string().max(255).optional().describe('Only events whose name contains this text (any case).'),
    limit: z.number().int().min(1).max(500).default(100).describe('How many to return (1-500, default 100).'),
  },
  output: {
    app_id: z.string(),
    events: z.array(dictionaryEntry),
    total: z.number(),
    has_more: z.boolean(),
  },
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: false,
  async run(args, { ctx, principal }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    const page = await eventDictionary(ctx, app, {
      includeArchived: args.include_archived,
      onlyUndefined: args.only_undefined,
      search: args.search,
      limit: args.limit,
    });
    return eventDictionaryView(app, page);
  },
  summary: (r) => `${r.events.length} of ${r.total} tracked events${r.has_more ? ' (more with a higher limit)' : ''}.`,
});
