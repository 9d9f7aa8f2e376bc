// The app a request acts on, resolved once per request before its handler runs: from `app_id`
// in the query or body when given, else the REST key's own app. A foreign app is 404 even for an
// operation that is not built yet, so no endpoint can be used to probe other tenants. The app is
// left in the request context. The ingestion operations read it from the root's app cache.
import type { NextFunction, Request, Response } from 'express';
import { appForMcpKey, appForRestKey } from '../admin/access.js';
import type { ServiceContext } from '../context.js';
import { requestContext } from './context.js';
import { operationId } from './operations.js';

/** The app id a request names in its query or JSON body, if any. */
export function requestedAppId(req: Request): string | undefined {
  const query = req.query as Record<string, unknown> | undefined;
  if (typeof query?.app_id === 'string') return query.app_id;
  const body = req.body as Record<string, unknown> | undefined;
  if (body && typeof body === 'object' && !Array.isArray(body)) {
    if (typeof body.app_id === 'string') return body.app_id;
    if (typeof body.appId === 'string') return body.appId;
  }
  return undefined;
}

/** Operations whose app is read from the root's app cache (admin/app-cache.ts): the ingestion path. */
export const CACHED_APP_OPERATIONS: ReadonlySet<string> = new Set(['Events_track', 'Events_trackBatch']);

export function resolveApp(ctx: Pick<ServiceContext, 'db' | 'apps'>) {
  const { db } = ctx;
  return async (req: Request, res: Response, next: NextFunction) => {
    const context = requestContext(res);
    const principal = context.principal;
    const appId = requestedAppId(req);
    if (principal?.kind === 'rest') {
      const id = operationId(req);
      const cache = id && CACHED_APP_OPERATIONS.has(id) ? ctx.apps : undefined;
      context.app = await appForRestKey(db, principal, appId, cache);
    }
    if (principal?.kind === 'mcp' && appId !== undefined) context.app = await appForMcpKey(db, principal, appId);
    next();
  };
}
