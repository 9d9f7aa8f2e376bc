// create_push_campaign: a push campaign through the same service as the admin API and the CLI,
// under the rules for campaigns a model starts (engagement/campaign-mcp-rules.ts): never at once,
// never sooner than the lead time, never more often than hourly, only where the app allows it,
// and recorded with the MCP key that created it. When the client can ask its person (elicitation),
// the campaign is planned without storing anything, shown to the person, and made only on accept.
import { z } from 'zod';
import { appForMcpKey } from '../../admin/access.js';
import { previewCampaign } from '../../engagement/campaign-preview.js';
import { commitCampaign, planCampaign } from '../../engagement/campaigns.js';
import { createdCampaignView } from '../../engagement/views.js';
import { AppError } from '../../errors.js';
import { appIdArgument, defineTool, textOrNull } from '../tool.js';
import type { Confirmation } from '../tool-talk.js';
import { CONFIRMATION_SCHEMA, confirmationMessage } from './campaign-confirmation.js';
import { campaignCreator } from './campaign-schemas.js';

const NOT_CONFIRMED: Record<Exclude<Confirmation, 'accept'>, string> = {
  decline: 'The person declined the campaign',
  cancel: 'The person dismissed the confirmation',
  timeout: 'The person did not answer the confirmation in time',
};

export const createPushCampaign = defineTool({
  name: 'create_push_campaign',
  title: 'Create a push campaign',
  description:
    'Creates a push notification campaign. schedule_type: "scheduled" sends once at scheduled_at; "recurring" sends on ' +
    "the cron expression `recurrence` in the organization time zone (default: daily at scheduled_at's time); " +
    '"slipping_away" reaches users inactive for inactivity_days (default 7), once per inactive stretch; "trigger" ' +
    'sends when a user does trigger_event_name (exact) or the tracked event that trigger_event_prompt describes, at most ' +
    'once per trigger_cooldown_hours (default 24) per user. Campaigns created here never send at once: the first send ' +
    "is at least the server's lead time (15 minutes unless the operator changed it) after creation, so that a person " +
    'can review or pause it; without scheduled_at the campaign starts at the earliest allowed time, returned as ' +
    'scheduled_at. A recurrence may not run more often than hourly, and a trigger cooldown may not be below 1 hour. ' +
    'A refusal names the earliest allowed time (details.earliest_scheduled_at) or the minimum interval ' +
    '(details.min_interval_minutes). ' +
    'Give the text as `message` (may contain {{first_name}}-style placeholders filled from user properties) or as a ' +
    '`prompt` the text is written from for each send. Target an existing audience_id, or describe the audience in ' +
    'audience_prompt to create one; without either, every user of the app is targeted. Users who set push_opt_out, ' +
    "the app's daily cap per user and its quiet hours are always respected. The campaign is returned with status " +
    'scheduled and records the MCP key that created it. When the client supports elicitation, the person is shown ' +
    'what would be sent, to how many users and when, and nothing is created unless they accept ' +
    '(CONFIRMATION_DECLINED otherwise).',
  input: {
    app_id: appIdArgument,
    name: z.string().min(1).max(255).describe('Internal name of the campaign.'),
    title: z.string().min(1).max(255).describe('Notification title.'),
    message: z.string().min(1).max(4096).optional().describe('Static text; give this or prompt.'),
    prompt: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .describe('Instructions the text is generated from; give this or message.'),
    max_characters: z.number().int().min(1).max(500).optional().describe('Longest text (default 150 for prompt).'),
    audience_id: z.string().min(1).max(255).optional().describe('Existing audience to target.'),
    audience_prompt: z
      .string()
      .min(1)
      .max(2000)
      .optional()
      .describe('Who to target, in plain words (creates an audience).'),
    schedule_type: z.enum(['scheduled', 'recurring', 'slipping_away', 'trigger']).describe('When the campaign sends.'),
    scheduled_at: z
      .string()
      .datetime({ offset: true })
      .optional()
      .describe('ISO 8601 time of the first send, at least the lead time from now; required for scheduled.'),
    recurrence: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe('Cron expression for recurring, at most hourly, e.g. "0 9 * * 1".'),
    inactivity_days: z.number().int().min(1).max(365).optional().describe('For slipping_away (default 7).'),
    trigger_event_name: z.string().min(1).max(255).optional().describe('Exact event name for trigger.'),
    trigger_event_prompt: z.string().min(1).max(2000).optional().describe('The triggering event described in words.'),
    trigger_cooldown_hours: z
      .number()
      .int()
      .min(0)
      .max(8760)
      .optional()
      .describe('For trigger: hours before the same user can trigger it again (default 24, at least 1).'),
    action_url: z.string().url().max(2048).optional().describe('URL opened when the notification is tapped.'),
  },
  output: {
    campaign_id: z.string(),
    name: z.string(),
    status: z.enum(['scheduled', 'live', 'paused', 'sent']),
    audience: z.object({ id: z.string(), user_count: z.number(), auto_created: z.boolean() }).nullable(),
    trigger: z
      .object({
        event_name: z.string(),
        match_method: z.enum(['exact', 'fuzzy', 'llm']),
        available_events_count: z.number(),
      })
      .nullable(),
    scheduled_at: textOrNull('When the first send is due (ISO 8601), or null when the campaign sends at once.'),
    created_by: campaignCreator.describe('The MCP key that created the campaign.'),
  },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  writes: true,
  async run({ app_id, ...input }, { ctx, principal, talk }) {
    const app = await appForMcpKey(ctx.db, principal, app_id);
    const creator = { kind: 'mcp' as const, key_id: principal.keyId, key_name: principal.keyName };
    const plan = await planCampaign(ctx, app, input, creator);
    const preview = await previewCampaign(ctx, plan);
    await talk.log('info', `The campaign would reach ${preview.reach} users now.`, { audience_size: preview.reach });
    if (talk.canConfirm) {
      const answer = await talk.confirm(confirmationMessage(plan, preview), CONFIRMATION_SCHEMA);
      if (answer !== 'accept') {
        throw new AppError(
          403,
          'CONFIRMATION_DECLINED',
          `${NOT_CONFIRMED[answer]}: nothing was created. Ask the person before trying again.`,
          { action: answer },
        );
      }
    }
    return createdCampaignView(await commitCampaign(ctx, plan));
  },
  summary: (r) => `Campaign ${r.campaign_id} created (status ${r.status}, first send ${r.scheduled_at ?? 'at once'}).`,
});
