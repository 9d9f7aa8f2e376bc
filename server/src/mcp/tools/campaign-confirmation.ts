// The question create_push_campaign asks the person at the AI client before a campaign is made
// (elicitation, form mode): what would be sent, to how many, and when, in plain words. Event
// names and texts in it come from the app's data and the model's request: the person reads them,
// which is the point.
import type { ElicitRequestFormParams } from '@modelcontextprotocol/sdk/types.js';
import type { CampaignPreview } from '../../engagement/campaign-preview.js';
import type { CampaignPlan } from '../../engagement/campaigns.js';
import { localTimestamp } from '../../time.js';

export const CONFIRMATION_SCHEMA: ElicitRequestFormParams['requestedSchema'] = {
  type: 'object',
  properties: {
    confirm: {
      type: 'boolean',
      title: 'Create and schedule this campaign',
      description: 'Leave it on and accept to create the campaign; decline to create nothing.',
      default: true,
    },
  },
  required: ['confirm'],
};

function when(plan: CampaignPlan): string {
  const { input, timeZone } = plan;
  const first = `${localTimestamp(plan.nextRunAt, timeZone)} (${timeZone})`;
  switch (input.schedule_type) {
    case 'recurring':
      return `on the schedule "${plan.input.recurrence ?? 'daily'}" (${timeZone}), first on ${first}`;
    case 'slipping_away':
      return `to users inactive for ${input.inactivity_days ?? 7} days, checked every 15 minutes from ${first}`;
    case 'trigger':
      return `each time a user does "${plan.trigger?.event_name}", at most once every ${input.trigger_cooldown_hours ?? 24} hours per user, from ${first}`;
    default:
      return `once, on ${first}`;
  }
}

/** The message of the confirmation, in plain words. */
export function confirmationMessage(plan: CampaignPlan, preview: CampaignPreview): string {
  const audience = !plan.audience
    ? 'every user of the app'
    : 'existing' in plan.audience
      ? `the audience ${plan.audience.existing.id}`
      : `a new audience: "${plan.audience.draft.input.criteria}"`;
  const text = preview.example
    ? `written anew at each send from the prompt "${plan.input.prompt}"; for example: "${preview.text}"`
    : `"${preview.text}"`;
  return [
    `An AI client asks to create the push campaign "${plan.input.name}" in the app ${plan.app.name} (${plan.app.id}).`,
    `Audience: ${audience}, ${preview.reach} user${preview.reach === 1 ? '' : 's'} now.`,
    `When: ${when(plan)}.`,
    `Title: "${plan.input.title}". Text: ${text}.`,
    'Nothing is created unless you accept.',
  ].join('\n');
}
