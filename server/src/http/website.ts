// The six website operations called by the browser SDK (no API key: the origin is checked).
import type { IdentifyRequest } from '@tally/client';
import type { Request, Response } from 'express';
import type { ServiceContext } from '../services/context.js';
import {
  type Caller,
  identify,
  logVisit,
  type PushSubscriptionInput,
  subscribePush,
  trackWebsiteEvent,
  upsertWebsiteUser,
  type VisitInput,
  type WebsiteEventInput,
  type WebsiteUserInput,
  websiteConfig,
} from '../services/website.js';
import { websiteApp } from './website-gate.js';

const caller = (req: Request): Caller => ({ ip: req.ip ?? null, ua: req.header('user-agent') ?? null });

export function websiteHandlers(ctx: ServiceContext) {
  return {
    Website_upsertUser: async (req: Request, res: Response) => {
      const user = await upsertWebsiteUser(ctx, await websiteApp(ctx, req), req.body as WebsiteUserInput);
      res.json({ success: true, user_id: user.id, external_id: user.external_id });
    },
    Website_config: async (req: Request, res: Response) => {
      res.json(await websiteConfig(ctx, await websiteApp(ctx, req)));
    },
    Website_logVisit: async (req: Request, res: Response) => {
      const app = await websiteApp(ctx, req);
      const visit = await logVisit(ctx, app, req.body as VisitInput, caller(req));
      res.json({ success: true, logged: visit.logged, visit_id: visit.visitId, is_bot: visit.isBot });
    },
    Website_trackEvent: async (req: Request, res: Response) => {
      const app = await websiteApp(ctx, req);
      const eventId = await trackWebsiteEvent(ctx, app, req.body as WebsiteEventInput, caller(req));
      res.json({ success: true, event_id: eventId });
    },
    Website_identify: async (req: Request, res: Response) => {
      const { visitor_id, user_id, user_hash } = req.body as IdentifyRequest;
      const user = await identify(ctx, await websiteApp(ctx, req), visitor_id, user_id, user_hash);
      res.json({ success: true, user_id: user.external_id });
    },
    Website_subscribePush: async (req: Request, res: Response) => {
      const app = await websiteApp(ctx, req);
      const id = await subscribePush(ctx, app, req.body as PushSubscriptionInput);
      res.json({ success: true, subscription_id: id });
    },
  };
}
