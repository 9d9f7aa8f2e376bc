// Security handlers for the contract's three schemes. Each leaves the authenticated principal in
// the request context, or the precise reason it refused so the error envelope can name it.
import type { Request } from 'express';
import {
  authenticateAdmin,
  authenticateMcp,
  authenticateRest,
  type KeyContext,
  type McpPrincipal,
  type Permission,
} from '../admin/keys.js';
import type { Config, RateLimitClass } from '../config.js';
import type { Clock } from '../context.js';
import { AppError, ForbiddenError, toAppError } from '../errors.js';
import { contextOf, type RequestContext } from './context.js';
import { operationId } from './operations.js';
import { applyDecision, type RateLimiter } from './rate-limit.js';

/** The token of an `Authorization: Bearer <token>` header. */
export function bearer(req: Request): string | undefined {
  const header = req.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

/**
 * Lets MCP clients that can send only `Authorization: Bearer <key>` present their MCP key that
 * way on /mcp: without an X-MCP-API-Key header, the bearer token is read as the MCP key (and then
 * checked as one, so a REST key or the admin token is refused there, as an MCP key is on REST).
 */
export function mcpBearerKey(req: Request, _res: unknown, next: () => void): void {
  if ((req.path === '/mcp' || req.path.startsWith('/mcp/')) && req.headers['x-mcp-api-key'] === undefined) {
    const token = bearer(req);
    if (token !== undefined) req.headers['x-mcp-api-key'] = token;
  }
  next();
}

export function requirePermission(principal: McpPrincipal, permission: Permission): void {
  if (!principal.permissions.includes(permission)) {
    throw new ForbiddenError('INSUFFICIENT_PERMISSIONS', `This MCP API key lacks the ${permission} permission.`, {
      required_permission: permission,
      current_permissions: principal.permissions,
    });
  }
}

/**
 * Runs a credential check behind the per-IP throttle of failed authentications: an IP over its
 * limit is refused (429) before any lookup, and a credential that is not valid counts against it.
 * The precise error is remembered for the envelope; anything unexpected (the database is down)
 * is mapped here too, so the validator never turns it into a 401.
 */
export async function checkCredential(limiter: RateLimiter, req: Request, check: () => Promise<void>): Promise<void> {
  // The address the request context read (proxy-addr parses it), else the request's own.
  const known = (req.res?.locals.ctx as RequestContext | undefined)?.ip;
  const ip = known ?? req.ip ?? '';
  if (req.res) await limiter.checkAuthFailures(req.res, ip);
  try {
    await check();
  } catch (err) {
    if (err instanceof AppError && err.code === 'INVALID_API_KEY') await limiter.recordAuthFailure(ip);
    throw err;
  }
}

async function guarded(limiter: RateLimiter, req: Request, check: () => Promise<void>): Promise<boolean> {
  try {
    await checkCredential(limiter, req, check);
    return true;
  } catch (err) {
    const context = contextOf(req);
    const error = toAppError(err, req);
    if (!(err instanceof AppError) && error.status >= 500) context.log.error({ err }, 'credential check failed');
    context.authFailure = error;
    // The validator answers with this status; the error middleware then renders authFailure.
    throw error;
  }
}

/** The REST rate-limit class of an operation (DESIGN: events, batch, analytics, other). */
function restClass(req: Request): RateLimitClass {
  const id = operationId(req);
  if (id === 'Events_track') return 'events';
  if (id === 'Events_trackBatch') return 'batch';
  if (id?.startsWith('Analytics_')) return 'analytics';
  return 'other';
}

/** Counts the request against its key's per-minute limit; throws 429 when it is over. */
async function limit(limiter: RateLimiter, req: Request, cls: RateLimitClass, keyId: string): Promise<void> {
  const decision = await limiter.consume(cls, keyId);
  const refused = decision && req.res ? applyDecision(req.res, decision) : null;
  if (refused) throw refused;
}

/** The validator's handlers of the three schemes: keys through the root's key cache, limits through its limiter. */
export function securityHandlers(keys: KeyContext & { clock: Clock }, config: Config, limiter: RateLimiter) {
  return {
    ApiKeyAuth: (req: Request) =>
      guarded(limiter, req, async () => {
        const principal = await authenticateRest(keys, bearer(req));
        await limit(limiter, req, restClass(req), principal.keyId);
        contextOf(req).principal = principal;
      }),
    McpApiKeyAuth: (req: Request) =>
      guarded(limiter, req, async () => {
        const principal = await authenticateMcp(keys, req.header('x-mcp-api-key'));
        requirePermission(principal, 'read');
        await limit(limiter, req, 'mcp', principal.keyId);
        contextOf(req).principal = principal;
      }),
    AdminTokenAuth: (req: Request) =>
      guarded(limiter, req, async () => {
        const token = await authenticateAdmin(keys.db, config, bearer(req), keys.clock());
        contextOf(req).principal = { kind: 'admin', tokenId: token.id, tokenLabel: token.label };
      }),
  };
}
