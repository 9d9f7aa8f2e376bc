// In front of /v1/website/* (mounted before contract validation): answers CORS preflights (rate
// limited per IP before any database query), echoes the Origin of callers the app allows (with
// credentials, so a JSON sendBeacon is delivered), and applies the per-IP-and-app rate limits.
// Handlers then call `websiteApp(req)`, which answers 404 for an unknown app and 403
// ORIGIN_NOT_ALLOWED for any other origin.
import { type NextFunction, type Request, type Response, Router } from 'express';
import type { Knex } from 'knex';
import type { RateLimitClass } from '../config.js';
import { ForbiddenError, NotFoundError } from '../errors.js';
import { isUuid } from '../ids.js';
import type { ServiceContext } from '../services/context.js';
import { callerOrigin, domainCandidates, originAllowed } from '../services/website-origin.js';
import { type AppRow, findApp } from '../storage/tenancy.js';
import { appsForHost } from '../storage/website.js';
import { applyDecision, consume, rateLimit } from './rate-limit.js';

interface Access {
  appId: string | undefined;
  app: AppRow | undefined;
  origin: string | null;
  allowed: boolean;
}

const accessByRequest = new WeakMap<Request, Promise<Access>>();

function requestedAppId(req: Request): string | undefined {
  const query = req.query as Record<string, unknown> | undefined;
  if (typeof query?.app_id === 'string') return query.app_id;
  const body = req.body as Record<string, unknown> | undefined;
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    if (typeof body.app_id === 'string') return body.app_id;
    if (typeof body.appId === 'string') return body.appId;
  }
  return undefined;
}

function access(db: Knex, req: Request): Promise<Access> {
  let found = accessByRequest.get(req);
  if (!found) {
    found = (async () => {
      const appId = requestedAppId(req);
      const origin = callerOrigin(req.header('origin'), req.header('referer'));
      const app = appId !== undefined && isUuid(appId) ? await findApp(db, appId) : undefined;
      return { appId, app, origin, allowed: app !== undefined && originAllowed(app, origin) };
    })();
    accessByRequest.set(req, found);
  }
  return found;
}

const EXPOSED = 'X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, X-Request-Id';

function allowOrigin(res: Response, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Allow-Credentials', 'true');
  res.setHeader('Access-Control-Expose-Headers', EXPOSED);
}

/** A preflight names no app, so it is answered for origins that some app allows. */
async function anyAppAllows(db: Knex, origin: string | null): Promise<boolean> {
  if (origin === null) return false;
  const candidates = domainCandidates(origin);
  if (!candidates) return false;
  const apps = await appsForHost(db, candidates.hostname, candidates.entries);
  return apps.some((app) => originAllowed(app, origin));
}

function rateClass(req: Request): RateLimitClass {
  return /^\/v1\/website\/(users|push-subscriptions)\/?(\?|$)/.test(req.originalUrl)
    ? 'website_users'
    : 'website_events';
}

export function websiteGate(ctx: ServiceContext): Router {
  const router = Router();
  router.use(
    '/v1/website',
    async (req: Request, res: Response, next: NextFunction) => {
      res.vary('Origin');
      const header = req.header('origin');
      if (req.method === 'OPTIONS') {
        // A preflight names no app: it is limited per IP, before the database is asked anything.
        const decision = await consume(ctx.config, 'website_events', `preflight|${req.ip ?? ''}`);
        const refused = decision ? applyDecision(res, decision) : null;
        if (refused) return next(refused);
        const origin = callerOrigin(header, undefined);
        if (header !== undefined && (await anyAppAllows(ctx.db, origin))) {
          allowOrigin(res, origin!);
          res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
          res.setHeader('Access-Control-Allow-Headers', 'Content-Type');
          res.setHeader('Access-Control-Max-Age', '600');
        }
        res.status(204).end();
        return;
      }
      const { allowed, origin } = await access(ctx.db, req);
      if (allowed && header !== undefined && origin !== null) allowOrigin(res, origin);
      next();
    },
    rateLimit(ctx.config, rateClass, (req) => `${req.ip ?? ''}|${requestedAppId(req) ?? ''}`),
  );
  return router;
}

/** The app of a website request whose origin it allows; 404 for an unknown app, else 403. */
export async function websiteApp(ctx: ServiceContext, req: Request): Promise<AppRow> {
  const { app, appId, origin, allowed } = await access(ctx.db, req);
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
