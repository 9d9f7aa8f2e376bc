// Recording events from the REST API, one at a time or in batches, through the one ingestion
// entry point (ingestion.ts): a batch is all or nothing.
import type { EventInput } from '@tally/client';
import type { ServiceContext } from '../context.js';
import type { AppRow } from '../storage/tenancy.js';
import { ingest } from './ingestion.js';

export async function track(ctx: ServiceContext, app: AppRow, input: EventInput) {
  const [result] = await ingest(ctx, { app, source: 'api', events: [input], at: '/body' });
  return result!;
}

export async function trackBatch(ctx: ServiceContext, app: AppRow, inputs: EventInput[]) {
  const results = await ingest(ctx, { app, source: 'api', events: inputs, at: '/body/events' });
  const duplicates = results.filter((r) => r.duplicate).length;
  return { processed: results.length - duplicates, duplicates };
}
