// Security handlers for the contract's three schemes. Each leaves the authenticated principal on
// the request, or remembers the precise reason it refused so the error envelope can name it.
import type { Request } from 'express';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Config, RateLimitClass } from '../config.js';
import { AppError, ForbiddenError, rememberAuthFailure, toAppError } from '../errors.js';
import {
  authenticateAdmin,
  authenticateMcp,
  authenticateRest,
  type McpPrincipal,
  type Permission,
  type RestPrincipal,
} from '../services/keys.js';
import { operationId } from './dispatch.js';
import { applyDecision, checkAuthFailures, consume, recordAuthFailure } from './rate-limit.js';

const principals = new WeakMap<Request, RestPrincipal | McpPrincipal>();

export function restPrincipal(req: Request): RestPrincipal {
  const p = principals.get(req);
  if (p?.kind !== 'rest') throw new Error('REST principal missing: route is not behind ApiKeyAuth');
  return p;
}

export function mcpPrincipal(req: Request): McpPrincipal {
  const p = principals.get(req);
  if (p?.kind !== 'mcp') throw new Error('MCP principal missing: route is not behind McpApiKeyAuth');
  return p;
}

export function restPrincipalOrNull(req: Request): RestPrincipal | null {
  const p = principals.get(req);
  return p?.kind === 'rest' ? p : null;
}

export function mcpPrincipalOrNull(req: Request): McpPrincipal | null {
  const p = principals.get(req);
  return p?.kind === 'mcp' ? p : null;
}

function bearer(req: Request): string | undefined {
  const header = req.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
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
export async function checkCredential(config: Config, req: Request, check: () => Promise<void>): Promise<void> {
  const ip = req.ip ?? '';
  if (req.res) await checkAuthFailures(config, req.res, ip);
  try {
    await check();
  } catch (err) {
    if (err instanceof AppError && err.code === 'INVALID_API_KEY') await recordAuthFailure(config, ip);
    throw err;
  }
}

async function guarded(config: Config, req: Request, check: () => Promise<void>): Promise<boolean> {
  try {
    await checkCredential(config, req, check);
    return true;
  } catch (err) {
    const error = toAppError(err, req);
    if (!(err instanceof AppError) && error.status >= 500) {
      ((req as { log?: Logger }).log ?? null)?.error({ err }, 'credential check failed');
    }
    rememberAuthFailure(req, error);
    throw { status: error.status };
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
async function limit(config: Config, req: Request, cls: RateLimitClass, keyId: string): Promise<void> {
  const decision = await consume(config, cls, keyId);
  const refused = decision && req.res ? applyDecision(req.res, decision) : null;
  if (refused) throw refused;
}

export function securityHandlers(db: Knex, config: Config) {
  return {
    ApiKeyAuth: (req: Request) =>
      guarded(config, req, async () => {
        const principal = await authenticateRest(db, bearer(req));
        await limit(config, req, restClass(req), principal.keyId);
        principals.set(req, principal);
      }),
    McpApiKeyAuth: (req: Request) =>
      guarded(config, req, async () => {
        const principal = await authenticateMcp(db, req.header('x-mcp-api-key'));
        requirePermission(principal, 'read');
        await limit(config, req, 'mcp', principal.keyId);
        principals.set(req, principal);
      }),
    AdminTokenAuth: (req: Request) => guarded(config, req, () => authenticateAdmin(db, config.adminToken, bearer(req))),
  };
}
