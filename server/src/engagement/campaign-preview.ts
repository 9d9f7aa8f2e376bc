// What a planned campaign would do, worked out without storing anything: how many users it would
// reach now, when it first sends, and its text (a prompt's text is written anew at each send, so
// the preview is one example). Shown to a person before a campaign an AI client asked for is made.

import type { ServiceContext } from '../context.js';
import { type CampaignPlan, DEFAULT_PROMPT_CHARACTERS } from './campaigns.js';
import { generateMessage } from './push/send.js';
import { countTargetUsers } from './queries/campaign-sends.js';

export interface CampaignPreview {
  /** Users the audience holds now (every user who may receive campaign pushes, without an audience). */
  reach: number;
  /** The notification text, or an example of it for a prompt. */
  text: string;
  /** True when `text` is an example written from the prompt. */
  example: boolean;
}

export async function previewCampaign(ctx: ServiceContext, plan: CampaignPlan): Promise<CampaignPreview> {
  const { input } = plan;
  const reach = !plan.audience
    ? await countTargetUsers(ctx.db, plan.app.id)
    : 'existing' in plan.audience
      ? plan.audience.existing.user_count
      : plan.audience.draft.userCount;
  if (input.prompt === undefined) return { reach, text: input.message ?? '', example: false };
  const limit = input.max_characters ?? DEFAULT_PROMPT_CHARACTERS;
  return { reach, text: await generateMessage(ctx, input.prompt, limit, input.title), example: true };
}
