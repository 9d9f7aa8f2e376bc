// Recording events, one at a time or in batches. Everything is checked before anything is stored,
// so a batch is all or nothing; the writes themselves go through the group-commit Ingestor.
import type { EventInput } from '@tally/client';
import { type FieldError, ValidationError } from '../errors.js';
import type { ServiceContext } from './context.js';
import type { IngestEvent } from './ingest.js';
import { checkIdentifier, checkProperties, checkTimestamp } from './limits.js';

export type { EventInput };

function toIngestEvent(appId: string, input: EventInput, path: string, now: Date, errors: FieldError[]): IngestEvent {
  checkIdentifier(input.user_id, `${path}/user_id`, errors);
  checkProperties(input.properties, `${path}/properties`, errors);
  const createdAt = input.timestamp ? new Date(input.timestamp) : now;
  if (input.timestamp) checkTimestamp(createdAt, now, `${path}/timestamp`, errors);
  return {
    appId,
    userRef: input.user_id,
    eventName: input.event_name,
    properties: input.properties ?? {},
    ip: input.ip ?? null,
    ua: input.ua ?? null,
    insertId: input.insert_id,
    createdAt,
    receivedAt: now,
    source: 'api',
  };
}

export async function track(ctx: ServiceContext, appId: string, input: EventInput) {
  const errors: FieldError[] = [];
  const event = toIngestEvent(appId, input, '/body', ctx.clock(), errors);
  if (errors.length > 0) throw new ValidationError(`Invalid event: ${errors[0]!.path} ${errors[0]!.message}.`, errors);
  const [result] = await ctx.ingestor.submit([event]);
  return result!;
}

export async function trackBatch(ctx: ServiceContext, appId: string, inputs: EventInput[]) {
  const errors: FieldError[] = [];
  const now = ctx.clock();
  const events = inputs.map((input, i) => toIngestEvent(appId, input, `/body/events/${i}`, now, errors));
  if (errors.length > 0) {
    const bad = new Set(errors.map((e) => e.path.split('/')[3]));
    throw new ValidationError(
      `${bad.size} of ${inputs.length} events are invalid (${[...bad].map((i) => `#${i}`).join(', ')}); nothing was stored.`,
      errors,
    );
  }
  const results = await ctx.ingestor.submit(events);
  const duplicates = results.filter((r) => r.duplicate).length;
  return { processed: results.length - duplicates, duplicates };
}
