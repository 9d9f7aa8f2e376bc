// The six website operations called by the browser SDK (no API key: the origin is checked).
import type { ServiceContext } from '../context.js';
import {
  identify,
  logVisit,
  subscribePush,
  trackWebsiteEvent,
  upsertWebsiteUser,
  websiteConfig,
} from '../website/website.js';
import type { RequestContext } from './context.js';
import type { Handlers } from './operations.js';
import { websiteApp } from './website-gate.js';

const caller = (request: RequestContext) => ({ ip: request.ip, ua: request.userAgent });

type WebsiteOperation =
  | 'Website_upsertUser'
  | 'Website_config'
  | 'Website_logVisit'
  | 'Website_trackEvent'
  | 'Website_identify'
  | 'Website_subscribePush';

export function websiteHandlers(ctx: ServiceContext): Handlers<WebsiteOperation> {
  return {
    Website_upsertUser: async ({ body }, request) => {
      const user = await upsertWebsiteUser(ctx, await websiteApp(request), body);
      return { success: true, user_id: user.id, external_id: user.external_id };
    },
    Website_config: async (_input, request) => websiteConfig(ctx, await websiteApp(request)),
    Website_logVisit: async ({ body }, request) => {
      const visit = await logVisit(ctx, await websiteApp(request), body, caller(request));
      return { success: true, logged: visit.logged, visit_id: visit.visitId, is_bot: visit.isBot };
    },
    Website_trackEvent: async ({ body }, request) => {
      const eventId = await trackWebsiteEvent(ctx, await websiteApp(request), body, caller(request));
      return { success: true, event_id: eventId };
    },
    Website_identify: async ({ body }, request) => {
      const user = await identify(ctx, await websiteApp(request), body.visitor_id, body.user_id, body.user_hash);
      return { success: true, user_id: user.external_id };
    },
    Website_subscribePush: async ({ body }, request) => {
      const id = await subscribePush(ctx, await websiteApp(request), body);
      return { success: true, subscription_id: id };
    },
  };
}
