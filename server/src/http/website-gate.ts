// In front of /v1/website/* (mounted before contract validation): answers CORS preflights (rate
// limited per IP before any database query), echoes the Origin of callers the app allows (with
// credentials, so a JSON sendBeacon is delivered), and applies the per-IP-and-app rate limits. It
// leaves its finding in the request context; handlers then call `websiteApp(request)`, which
// answers 404 for an unknown app and 403 ORIGIN_NOT_ALLOWED for any other origin.
import { type NextFunction, type Request, type Response, Router } from 'express';
import type { RateLimitClass } from '../config.js';
import type { ServiceContext } from '../context.js';
import { ForbiddenError, NotFoundError } from '../errors.js';
import type { AppRow } from '../storage/tenancy.js';
import { callerOrigin, someAppAllows, websiteAccess } from '../website/origin.js';
import { requestedAppId } from './access.js';
import { type RequestContext, requestContext } from './context.js';
import { applyDecision, type RateLimiter } from './rate-limit.js';

const EXPOSED = 'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, X-Request-Id';

function allowOrigin(res: Response, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Allow-Credentials', 'true');
  res.setHeader('Access-Control-Expose-Headers', EXPOSED);
}

/** Writes that name a user's identity (users, identify, push subscriptions) share the smaller class. */
function rateClass(req: Request): RateLimitClass {
  return /^\/v1\/website\/(users|identify|push-subscriptions)\/?(\?|$)/.test(req.originalUrl)
    ? 'website_users'
    : 'website_events';
}

export function websiteGate(ctx: ServiceContext, limiter: RateLimiter): Router {
  const router = Router();
  router.use(
    '/v1/website',
    async (req: Request, res: Response, next: NextFunction) => {
      res.vary('Origin');
      const header = req.header('origin');
      if (req.method === 'OPTIONS') {
        // A preflight names no app: it is limited per IP, before the database is asked anything.
        const decision = await limiter.consume('website_events', `preflight|${req.ip ?? ''}`);
        const refused = decision ? applyDecision(res, decision) : null;
        if (refused) return next(refused);
        const origin = callerOrigin(header, undefined);
        if (header !== undefined && (await someAppAllows(ctx, origin))) {
          allowOrigin(res, origin!);
          res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
          res.setHeader('Access-Control-Allow-Headers', 'Content-Type');
          res.setHeader('Access-Control-Max-Age', '600');
        }
        res.status(204).end();
        return;
      }
      const request = requestContext(res);
      request.website = websiteAccess(ctx, requestedAppId(req), callerOrigin(header, req.header('referer')));
      const { allowed, origin } = await request.website;
      if (allowed && header !== undefined && origin !== null) allowOrigin(res, origin);
      next();
    },
    limiter.middleware(rateClass, (req) => `${req.ip ?? ''}|${requestedAppId(req) ?? ''}`),
  );
  return router;
}

/** The app of a website request whose origin it allows; 404 for an unknown app, else 403. */
export async function websiteApp(request: RequestContext): Promise<AppRow> {
  if (!request.website) throw new Error('The website gate did not run for this request');
  const { app, appId, origin, allowed } = await request.website;
  if (!app) throw new NotFoundError(`No app with id ${appId ?? '(none)'}.`);
  if (!allowed) {
    throw new ForbiddenError(
      'ORIGIN_NOT_ALLOWED',
      origin === null
        ? "The request has no Origin or Referer header; website endpoints only answer pages of the app's website."
        : `The origin ${origin} may not call this app's website endpoints. Set the app's website_url to it or add its host to authorized_domains.`,
      { origin },
    );
  }
  return app;
}
