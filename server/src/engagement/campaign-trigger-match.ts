// Which tracked event a trigger campaign waits for: an exact name as given, or an event matched
// from a description through the app's lexicon (names, their word forms and synonyms); when the
// lexicon finds none or several equally good, the language model (when configured) chooses among
// the tracked events. Reports how it was matched and how many events were available.

import type { ServiceContext } from '../context.js';
import { ValidationError } from '../errors.js';
import { forms, nameWords } from '../language/lexicon.js';
import { appLexicon } from '../language/service.js';

export interface TriggerMatch {
  event_name: string;
  match_method: 'exact' | 'fuzzy' | 'llm';
  available_events_count: number;
}

const STOP = new Set([
  'a',
  'an',
  'the',
  'when',
  'user',
  'users',
  'someone',
  'they',
  'their',
  'does',
  'do',
  'did',
  'event',
]);

export async function matchTriggerEvent(
  ctx: ServiceContext,
  appId: string,
  name: string | undefined,
  prompt: string | undefined,
): Promise<TriggerMatch> {
  const lexicon = await appLexicon(ctx, appId);
  const names = lexicon.events.map((e) => e.name);
  const available = names.length;
  if (name !== undefined) return { event_name: name, match_method: 'exact', available_events_count: available };
  const text = prompt!.trim();
  const quoted = [text, ...[...text.matchAll(/["'`]([^"'`]{1,255})["'`]/g)].map((m) => m[1]!)];
  for (const q of quoted) {
    const hit = names.find((n) => n === q) ?? names.find((n) => n.toLowerCase() === q.toLowerCase());
    if (hit) return { event_name: hit, match_method: 'exact', available_events_count: available };
  }
  const promptForms = new Set(
    nameWords(text)
      .filter((w) => !STOP.has(w))
      .flatMap((w) => forms(w)),
  );
  const scores = new Map<string, number>();
  for (const event of names) {
    const words = nameWords(event);
    const matched = words.filter((w) => forms(w).some((f) => promptForms.has(f))).length;
    if (matched > 0) scores.set(event, matched / words.length + matched * 0.01);
  }
  // Synonyms the lexicon knows ("buy" for purchase events).
  for (const form of promptForms) {
    for (const entry of lexicon.entriesFor(form)) {
      if (entry.words.length !== 1 || (entry.target.kind !== 'event' && entry.target.kind !== 'agent')) continue;
      for (const event of entry.target.events) scores.set(event, Math.max(scores.get(event) ?? 0, 0.5));
    }
  }
  const ranked = [...scores].sort((a, b) => b[1] - a[1]);
  const best = ranked[0];
  if (best && (ranked.length === 1 || ranked[1]![1] < best[1])) {
    return { event_name: best[0], match_method: 'fuzzy', available_events_count: available };
  }
  if (ctx.llm && available > 0) {
    const candidates = ranked.length > 0 ? ranked.map(([n]) => n) : names.slice(0, 200);
    try {
      const answer = await ctx.llm.json<{ event_name: string | null }>({
        system:
          'You pick the tracked analytics event that a push campaign should be triggered by. Answer with one ' +
          'event name copied exactly from the list, or null when none fits.',
        prompt: `Trigger description: ${text}\nTracked events:\n${candidates.join('\n')}`,
        schemaName: 'trigger_event',
        schema: {
          type: 'object',
          properties: { event_name: { type: ['string', 'null'] } },
          required: ['event_name'],
          additionalProperties: false,
        },
      });
      if (answer?.event_name && names.includes(answer.event_name)) {
        return { event_name: answer.event_name, match_method: 'llm', available_events_count: available };
      }
    } catch (err) {
      ctx.logger.warn({ err: (err as Error).message }, 'language model failed to match a trigger event');
    }
  }
  const listed = (ranked.length > 1 ? ranked.map(([n]) => n) : names).slice(0, 20);
  const why =
    available === 0
      ? 'this app has tracked no events yet; give trigger_event_name with the exact event name instead'
      : ranked.length > 1
        ? `several tracked events match equally well (${listed.join(', ')}); name one with trigger_event_name`
        : `no tracked event matches; tracked events include ${listed.join(', ')}`;
  throw new ValidationError(`Invalid campaign: /body/trigger_event_prompt ${why}.`, [
    { path: '/body/trigger_event_prompt', message: why },
  ]);
}
