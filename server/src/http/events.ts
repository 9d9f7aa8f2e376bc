// POST /v1/events and /v1/events/batch.
import type { ServiceContext } from '../context.js';
import { track, trackBatch } from '../tracking/events.js';
import { batchAcceptedView, eventAcceptedView } from '../tracking/views.js';
import { requireApp } from './context.js';
import type { Handlers } from './operations.js';

export function eventHandlers(ctx: ServiceContext): Handlers<'Events_track' | 'Events_trackBatch'> {
  return {
    Events_track: async ({ body }, request) => eventAcceptedView(await track(ctx, requireApp(request), body)),
    Events_trackBatch: async ({ body }, request) =>
      batchAcceptedView(await trackBatch(ctx, requireApp(request), body.events)),
  };
}
