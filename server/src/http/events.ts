// POST /v1/events and /v1/events/batch.
import type { Request, Response } from 'express';
import type { ServiceContext } from '../services/context.js';
import { type EventInput, track, trackBatch } from '../services/events.js';
import { requestApp } from './access.js';

export function eventHandlers(ctx: ServiceContext) {
  return {
    Events_track: async (req: Request, res: Response) => {
      const result = await track(ctx, requestApp(req).id, req.body as EventInput);
      res.json({
        success: true,
        event_id: result.eventId,
        message: result.duplicate
          ? 'Already recorded: an event with this insert_id was stored earlier.'
          : 'Event recorded.',
        ...(result.duplicate ? { duplicate: true } : {}),
      });
    },
    Events_trackBatch: async (req: Request, res: Response) => {
      const { events } = req.body as { events: EventInput[] };
      const { processed, duplicates } = await trackBatch(ctx, requestApp(req).id, events);
      res.json({
        success: true,
        processed_count: processed,
        duplicates,
        message:
          duplicates > 0
            ? `${processed} events recorded; ${duplicates} were already recorded.`
            : `${processed} events recorded.`,
      });
    },
  };
}
