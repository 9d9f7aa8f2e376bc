// The one typed context of a request: who is calling, which app it acts on, and how to log it.
// One middleware creates it (first in the pipeline); the security handlers, the app resolver and
// the website gate fill it in; handlers receive it as an argument. It lives in res.locals, so
// nothing about a request is kept in module state.
import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { McpPrincipal, RestPrincipal } from '../admin/keys.js';
import type { AppError } from '../errors.js';
import { type Metrics, UNMATCHED } from '../metrics.js';
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

/** What the request line and the HTTP metrics need besides the logger. */
export interface RequestObservers {
  /** The operation a request is counted under (http/operation-label.ts). */
  label?: (req: Request) => string;
  metrics?: Metrics;
}

/**
 * Creates the context, with the request id (the caller's X-Request-Id when well formed) and logger,
 * and, when the response ends (or the client leaves first), writes the request's one log line and
 * counts it: operation, method, status, latency and the app when one was resolved; never the path,
 * query, headers or body, which may carry keys, identifiers or users' values.
 */
export function requestContextMiddleware(logger: Logger, observers: RequestObservers = {}) {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.header('x-request-id');
    const requestId = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    // The request's child logger is made when something logs, not for every request.
    let log: Logger | undefined;
    const context: RequestContext = {
      requestId,
      get log() {
        log ??= logger.child({ request_id: requestId });
        return log;
      },
      // Read now: the socket's address is gone once the client has left.
      ip: req.ip ?? null,
      get userAgent() {
        return req.header('user-agent') ?? null;
      },
      origin: `${req.protocol}://${req.get('host') ?? 'localhost'}`,
      principal: null,
      app: null,
      website: null,
      authFailure: null,
    };
    res.locals.ctx = context;
    const started = process.hrtime.bigint();
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const operation = observers.label?.(req) ?? UNMATCHED;
      const status = res.statusCode;
      observers.metrics?.httpRequests.inc({ operation, status: String(status) });
      observers.metrics?.httpDuration.observe({ operation }, seconds);
      if (!logger.isLevelEnabled('info')) return;
      const line = {
        operation,
        method: req.method,
        status,
        duration_ms: Math.round(seconds * 10_000) / 10,
        ...(res.writableFinished ? {} : { aborted: true }),
      };
      void appIdOf(context).then((appId) => context.log.info(appId ? { ...line, app_id: appId } : line, 'request'));
    });
    next();
  };
}

/** The app the request acted on, once known: resolved by the pipeline, or by the website gate. */
async function appIdOf(context: RequestContext): Promise<string | undefined> {
  if (context.app) return context.app.id;
  if (!context.website) return undefined;
  return context.website.then(
    (access) => access.app?.id,
    () => undefined,
  );
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
