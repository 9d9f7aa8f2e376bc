// The app a request acts on, resolved once per request before its handler runs: from `app_id`
// in the query or body when given, else the REST key's own app. A foreign app is 404 even for an
// operation that is not built yet, so no endpoint can be used to probe other tenants.
import type { NextFunction, Request, Response } from 'express';
import type { Knex } from 'knex';
import { appForMcpKey, appForRestKey } from '../services/access.js';
import type { AppRow } from '../storage/tenancy.js';
import { mcpPrincipalOrNull, restPrincipalOrNull } from './auth.js';

const apps = new WeakMap<Request, AppRow>();

function requestedAppId(req: Request): string | undefined {
  const fromQuery = (req.query as Record<string, unknown>)?.app_id;
  if (typeof fromQuery === 'string') return fromQuery;
  const body = req.body as Record<string, unknown> | undefined;
  return typeof body?.app_id === 'string' ? body.app_id : undefined;
}

export function resolveApp(db: Knex) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const rest = restPrincipalOrNull(req);
    const appId = requestedAppId(req);
    if (rest) apps.set(req, await appForRestKey(db, rest, appId));
    const mcp = mcpPrincipalOrNull(req);
    if (mcp && appId !== undefined) apps.set(req, await appForMcpKey(db, mcp, appId));
    next();
  };
}

/** The app resolved for this request (REST: always; MCP: when app_id was given). */
export function requestApp(req: Request): AppRow {
  const app = apps.get(req);
  if (!app) throw new Error('No app resolved for this request');
  return app;
}

export function requestAppOrNull(req: Request): AppRow | undefined {
  return apps.get(req);
}
