// The six website operations called by the browser SDK (no API key: the origin is checked).
import type { ServiceContext } from '../context.js';
import {
  identifyView,
  pushSubscriptionView,
  visitView,
  websiteConfigView,
  websiteEventView,
  websiteUserView,
} from '../website/views.js';
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
    Website_upsertUser: async ({ body }, request) =>
      websiteUserView(await upsertWebsiteUser(ctx, await websiteApp(request), body)),
    Website_config: async (_input, request) => websiteConfigView(await websiteConfig(ctx, await websiteApp(request))),
    Website_logVisit: async ({ body }, request) =>
      visitView(await logVisit(ctx, await websiteApp(request), body, caller(request))),
    Website_trackEvent: async ({ body }, request) =>
      websiteEventView(await trackWebsiteEvent(ctx, await websiteApp(request), body, caller(request))),
    Website_identify: async ({ body }, request) =>
      identifyView(await identify(ctx, await websiteApp(request), body.visitor_id, body.user_id, body.user_hash)),
    Website_subscribePush: async ({ body }, request) =>
      pushSubscriptionView(await subscribePush(ctx, await websiteApp(request), body)),
  };
}
