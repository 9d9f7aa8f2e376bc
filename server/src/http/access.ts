// The app a request acts on, resolved once per request before its handler runs: from `app_id`
// in the query or body when given, else the REST key's own app. A foreign app is 404 even for an
// operation that is not built yet, so no endpoint can be used to probe other tenants. The app is
// left in the request context.
import type { NextFunction, Request, Response } from 'express';
import { appForMcpKey, appForRestKey } from '../admin/access.js';
import type { Db } from '../storage/handle.js';
import { requestContext } from './context.js';

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

export function resolveApp(db: Db) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const context = requestContext(res);
    const principal = context.principal;
    const appId = requestedAppId(req);
    if (principal?.kind === 'rest') context.app = await appForRestKey(db, principal, appId);
    if (principal?.kind === 'mcp' && appId !== undefined) context.app = await appForMcpKey(db, principal, appId);
    next();
  };
}
