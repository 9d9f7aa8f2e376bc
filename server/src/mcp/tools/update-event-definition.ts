// update_event_definition: documents one tracked event (display name, description, category,
// property notes) or archives it.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { defineEvent } from '../../analytics/event-dictionary.js';
import { dictionaryEntryView } from '../../analytics/views.js';
import { appIdArgument, defineTool } from '../tool.js';
import { dictionaryEntry } from './list-event-dictionary.js';

export const updateEventDefinition = defineTool({
  name: 'update_event_definition',
  title: 'Define a tracked event',
  description:
    "Updates the definition of one event in an app's event dictionary, named by event_id or by event_name (exactly one): " +
    'its display name, description (an event with a description counts as defined), category, archived flag, and notes on ' +
    'its properties (a map from property name to description, merged with the notes already there). Fields left out are ' +
    'unchanged; null clears a text field. Only events the app has tracked can be defined. Returns the updated definition.',
  input: {
    app_id: appIdArgument,
    event_id: z.string().max(255).optional().describe('The event definition id (from list_event_dictionary).'),
    event_name: z.string().max(255).optional().describe('The exact event name.'),
    display_name: z.string().max(255).nullable().optional().describe('A readable name.'),
    description: z.string().max(2000).nullable().optional().describe('What the event means and when it is sent.'),
    category: z.string().max(255).nullable().optional().describe('A grouping, for example "commerce".'),
    archived: z.boolean().optional().describe('Hide it from the dictionary by default.'),
    properties: z
      .record(z.string().max(255), z.string().max(2000))
      .optional()
      .describe('Notes on its properties: property name to description.'),
  },
  output: dictionaryEntry.shape,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  writes: true,
  async run(args, { ctx, principal }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    const { app_id: _app, event_id, event_name, ...patch } = args;
    return dictionaryEntryView(await defineEvent(ctx, app, { event_id, event_name }, patch));
  },
  summary: (r) => `The definition of event ${r.id} was updated; it is ${r.defined ? 'defined' : 'not defined yet'}.`,
});
