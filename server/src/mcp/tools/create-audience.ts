// create_audience: an audience from criteria in plain words, through the same service as
// POST /v1/audiences.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { createAudience as create } from '../../audiences/audiences.js';
import { createdAudienceBrief } from '../../audiences/views.js';
import { appIdArgument, defineTool } from '../tool.js';

export const createAudience = defineTool({
  name: 'create_audience',
  title: 'Create an audience',
  description:
    'Creates an audience (a saved segment of users) from a description in plain words of who belongs in it, for example ' +
    '"users who purchased at least twice in the last 30 days", "premium users in France", "users inactive for 14 days". ' +
    'The description is read by the built-in engine (query_method rules, confidence 1) or, when it cannot read it and a ' +
    "language model is configured, turned into SQL by the model (query_method llm_sql, the model's confidence). " +
    'Returns the audience id, how many users are in it now and, when the built-in engine read the description, how it ' +
    'understood it in plain words (interpretation; check it says what you meant). The audience is evaluated again ' +
    'whenever it is used.',
  input: {
    app_id: appIdArgument,
    name: z.string().min(1).max(255).describe('A name for the audience.'),
    description: z.string().min(1).max(2000).describe('Who belongs in the audience, in plain words.'),
  },
  output: {
    audience_id: z.string(),
    name: z.string(),
    user_count: z.number(),
    query_method: z.enum(['rules', 'llm', 'llm_sql', 'sql']),
    confidence: z.number().describe('Confidence in the reading, 0 to 1 (1 for the built-in engine).'),
    interpretation: z
      .string()
      .optional()
      .describe('Who the description was understood as, in plain words; absent when a language model wrote the SQL.'),
  },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  writes: true,
  async run(args, { ctx, principal, talk }) {
    const app = await appForMcpKey(ctx.db, principal, args.app_id);
    const created = await create(ctx, app.id, {
      name: args.name,
      description: args.description,
      criteria: args.description,
    });
    await talk.log('info', `The audience has ${created.userCount} users now.`, {
      audience_id: created.audience.id,
      user_count: created.userCount,
      query_method: created.queryMethod,
    });
    return createdAudienceBrief(created);
  },
  summary: (r) => `Audience ${r.audience_id} created with ${r.user_count} user${r.user_count === 1 ? '' : 's'}.`,
});
