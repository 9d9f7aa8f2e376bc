// The one typed context of a request: who is calling, which app it acts on, and how to log it.
// One middleware creates it (first in the pipeline); the security handlers, the app resolver and
// the website gate fill it in; handlers receive it as an argument. It lives in res.locals, so
// nothing about a request is kept in module state.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { McpPrincipal, RestPrincipal } from '../admin/keys.js';
import type { AppError } from '../errors.js';
import type { Actor } from '../storage/audit.js';
import type { AppRow } from '../storage/tenancy.js';

/** The holder of the admin token: which token (a stored token's id, `env` or `env-previous`) and its label. */
export interface AdminPrincipal {
  kind: 'admin';
  tokenId: string;
  tokenLabel: string;
}

export type Principal = RestPrincipal | McpPrincipal | AdminPrincipal;

/** What the website gate found: the app a website request names, and whether its origin may use it. */
export interface WebsiteAccess {
  appId: string | undefined;
  app: AppRow | undefined;
  origin: string | null;
  allowed: boolean;
}

export interface RequestContext {
  readonly requestId: string;
  readonly log: Logger;
  /** The caller's address (after TRUST_PROXY) and user agent. */
  readonly ip: string | null;
  readonly userAgent: string | null;
  /** The scheme and host the request came to, e.g. `https://tally.example.com`. */
  readonly origin: string;
  /** Set by the security handler of the operation's scheme. */
  principal: Principal | null;
  /** The app the request acts on (REST: always; MCP: when it names one). */
  app: AppRow | null;
  /** Website operations: the app named and whether the request's origin may use it. */
  website: Promise<WebsiteAccess> | null;
  /** Why a credential was refused, for the error envelope (the validator keeps only a status). */
  authFailure: AppError | null;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Creates the context, with the request id (the caller's X-Request-Id when well formed) and logger. */
export function requestContextMiddleware(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.header('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    const log = logger.child({ request_id: requestId });
    const context: RequestContext = {
      requestId,
      log,
      ip: req.ip ?? null,
      userAgent: req.header('user-agent') ?? null,
      origin: `${req.protocol}://${req.get('host') ?? 'localhost'}`,
      principal: null,
      app: null,
      website: null,
      authFailure: null,
    };
    res.locals.ctx = context;
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      log.info({ method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 10) / 10 }, 'request');
    });
    next();
  };
}

/** The context of this request (the one accessor). */
export function requestContext(res: Response): RequestContext {
  const context = res.locals.ctx as RequestContext | undefined;
  if (!context) throw new Error('No request context: requestContextMiddleware is not mounted first');
  return context;
}

/** For the places Express hands only the request (security handlers). */
export const contextOf = (req: Request): RequestContext => requestContext(req.res as Response);

export function restPrincipal(context: RequestContext): RestPrincipal {
  const p = context.principal;
  if (p?.kind !== 'rest') throw new Error('REST principal missing: route is not behind ApiKeyAuth');
  return p;
}

export function mcpPrincipal(context: RequestContext): McpPrincipal {
  const p = context.principal;
  if (p?.kind !== 'mcp') throw new Error('MCP principal missing: route is not behind McpApiKeyAuth');
  return p;
}

/** Who is acting, as the audit trail records it. */
export function actorOf(context: RequestContext): Actor {
  const p = context.principal;
  if (p?.kind === 'admin') return { kind: 'admin', id: p.tokenId, label: p.tokenLabel };
  if (p?.kind === 'rest' || p?.kind === 'mcp') return { kind: p.kind, id: p.keyId, label: p.keyName };
  throw new Error('No principal: route is not behind a security scheme');
}

/** The app resolved for this request; an operation that needs one always has one. */
export function requireApp(context: RequestContext): AppRow {
  if (!context.app) throw new Error('No app resolved for this request');
  return context.app;
}
