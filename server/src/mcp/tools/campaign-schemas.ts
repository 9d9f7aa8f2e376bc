// Output schemas shared by the campaign tools: the list entry and the detail (the same shapes as
// the MCP campaign GETs, DESIGN §10).
import { z } from 'zod';
import { textOrNull } from '../tool.js';

export const campaignStatus = z.enum(['scheduled', 'live', 'paused', 'sent']);
export const scheduleType = z.enum(['now', 'scheduled', 'recurring', 'slipping_away', 'trigger']);

const counts = {
  sent: z.number().describe('Notifications the provider accepted.'),
  delivered: z.number().describe('Notifications the provider confirmed for delivery.'),
  clicked: z.number().describe('Notifications whose tracked link was opened.'),
  converted: z.number().describe('Sent notifications followed by a conversion event within 24 hours.'),
};

export const campaignSummary = z.object({
  id: z.string(),
  name: z.string(),
  title: z.string(),
  status: campaignStatus,
  schedule_type: scheduleType,
  trigger_event: textOrNull('The event that triggers the campaign, or null.'),
  audience_id: textOrNull('The targeted audience, or null when every user is targeted.'),
  created_at: z.string(),
  stats: z.object(counts),
});

/** Who created a campaign (the MCP key for campaigns from AI clients). */
export const campaignCreator = z.object({
  kind: z.enum(['admin', 'mcp']).describe('admin: the admin API or CLI; mcp: an MCP key.'),
  key_id: textOrNull('The MCP key that created it; null for admin.'),
  key_name: textOrNull("That key's label; null for admin."),
});

export const campaignDetailShape = {
  id: z.string(),
  name: z.string(),
  title: z.string(),
  message: textOrNull('The static text, or null when the text is written from a prompt.'),
  status: campaignStatus,
  schedule_type: scheduleType,
  trigger_event: textOrNull('The event that triggers the campaign, or null.'),
  audience_id: textOrNull('The targeted audience, or null when every user is targeted.'),
  audience_name: textOrNull("The targeted audience's name, or null."),
  created_at: z.string(),
  updated_at: z.string(),
  created_by: campaignCreator.nullable().describe('Who created it; null for campaigns from before this was recorded.'),
  stats: z.object({
    ...counts,
    delivery_rate: z.number().describe('delivered / sent, in percent with two decimals.'),
    click_rate: z.number().describe('clicked / delivered, in percent.'),
    conversion_rate: z.number().describe('converted / delivered, in percent.'),
    failed_occurrences: z
      .number()
      .describe('Trigger occurrences that could not be prepared after 5 attempts: no push was made for them.'),
  }),
  performance: z.object({
    avg_delivery_time: textOrNull('Average time to the provider\'s answer, e.g. "1.8s", or null before any send.'),
    peak_delivery_hour: textOrNull('The busiest send hour, "HH:00" in the organization time zone, or null.'),
    best_performing_segment: textOrNull('The segment with the highest click rate, or null.'),
  }),
  next_run_at: textOrNull('When the campaign next runs (ISO 8601), or null.'),
};
