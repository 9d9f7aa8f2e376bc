// POST /v1/events and /v1/events/batch.
import type { ServiceContext } from '../context.js';
import { track, trackBatch } from '../tracking/events.js';
import { requireApp } from './context.js';
import type { Handlers } from './operations.js';

export function eventHandlers(ctx: ServiceContext): Handlers<'Events_track' | 'Events_trackBatch'> {
  return {
    Events_track: async ({ body }, request) => {
      const result = await track(ctx, requireApp(request), body);
      return {
        success: true,
        event_id: result.eventId,
        message: result.duplicate
          ? 'Already recorded: an event with this insert_id was stored earlier.'
          : 'Event recorded.',
        ...(result.duplicate ? { duplicate: true } : {}),
      };
    },
    Events_trackBatch: async ({ body }, request) => {
      const { processed, duplicates } = await trackBatch(ctx, requireApp(request), body.events);
      return {
        success: true,
        processed_count: processed,
        duplicates,
        message:
          duplicates > 0
            ? `${processed} events recorded; ${duplicates} were already recorded.`
            : `${processed} events recorded.`,
      };
    },
  };
}
