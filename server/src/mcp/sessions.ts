// MCP sessions: opened by initialize, carried by the Mcp-Session-Id (or X-MCP-Session-Id) header,
// closed by DELETE /mcp, by 30 minutes without use, or by eviction. They live in the database, so
// any instance serves any session. A key holds at most 50: when it has 50, opening another evicts
// the least recently used one idle for at least a minute (clients that never send DELETE cannot
// lock their key out); only when all 50 were used within the last minute is initialize refused,
// with the seconds until one becomes evictable. A request on an evicted session gets 404, which
// tells a client to initialize again.
import { randomUUID } from 'node:crypto';
import { type LoggingLevel, LoggingLevelSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpPrincipal } from '../admin/keys.js';
import type { ServiceContext } from '../context.js';
import { AppError, STATUS_OF } from '../errors.js';
import {
  countSessionsUsedSince,
  deleteSession,
  openSessionUnderCap,
  setSessionLogLevel,
  touchSession,
} from './queries/sessions.js';

export const SESSION_IDLE_MS = 30 * 60_000;
export const MAX_SESSIONS_PER_KEY = 50;
/** A session unused for this long may be evicted to make room for a new one. */
export const EVICTABLE_AFTER_MS = 60_000;

export class TooManySessionsError extends AppError<'RATE_LIMIT_EXCEEDED'> {
  constructor(open: number, retryAfter: number) {
    super(
      STATUS_OF.RATE_LIMIT_EXCEEDED,
      'RATE_LIMIT_EXCEEDED',
      `This MCP key has ${open} sessions, the most it may hold (${MAX_SESSIONS_PER_KEY}), and all were used in the last ${EVICTABLE_AFTER_MS / 1000} seconds. Close one (DELETE /mcp), or retry in ${retryAfter} seconds, when the least recently used one can be replaced.`,
      { reason: 'sessions', limit: MAX_SESSIONS_PER_KEY, open, retry_after: retryAfter },
    );
  }
}

export interface ClientHello {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  clientInfo: Record<string, unknown>;
}

/** Opens a session for the key (evicting an idle one at the cap); throws TooManySessionsError. */
export async function openSession(
  ctx: Pick<ServiceContext, 'db' | 'clock'> & Partial<Pick<ServiceContext, 'metrics'>>,
  principal: McpPrincipal,
  client: ClientHello,
): Promise<string> {
  const now = ctx.clock();
  const id = randomUUID();
  const outcome = await openSessionUnderCap(
    ctx.db,
    {
      id,
      key_id: principal.keyId,
      organization_id: principal.organizationId,
      protocol_version: client.protocolVersion,
      client_capabilities: client.capabilities,
      client_info: client.clientInfo,
      created_at: now,
    },
    {
      max: MAX_SESSIONS_PER_KEY,
      expiredBefore: new Date(now.getTime() - SESSION_IDLE_MS),
      evictableBefore: new Date(now.getTime() - EVICTABLE_AFTER_MS),
    },
  );
  if (!outcome.opened) {
    const waitMs = outcome.oldestUse.getTime() + EVICTABLE_AFTER_MS - now.getTime();
    throw new TooManySessionsError(outcome.open, Math.max(1, Math.ceil(waitMs / 1000)));
  }
  ctx.metrics?.mcpSessionsCreated.inc();
  return id;
}

const SESSION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The session a request belongs to, as stored: what the request needs of it. */
export interface SessionState {
  id: string;
  /** The logging level the client asked for (logging/setLevel), or null when it never did. */
  logLevel: LoggingLevel | null;
  /** What the client declared at initialize (its capabilities say whether it can be asked to confirm). */
  client: ClientHello;
}

export function parseLogLevel(value: unknown): LoggingLevel | null {
  const parsed = LoggingLevelSchema.safeParse(value);
  return parsed.success ? parsed.data : null;
}

/**
 * The key's session with this id, read from the database as every request after initialize
 * reads it (on any instance), and marked used; undefined when it is closed, expired or evicted.
 */
export async function resumeSession(
  ctx: Pick<ServiceContext, 'db' | 'clock'>,
  principal: McpPrincipal,
  id: string,
): Promise<SessionState | undefined> {
  if (!SESSION_ID.test(id)) return undefined;
  const now = ctx.clock();
  const row = await touchSession(ctx.db, principal.keyId, id, new Date(now.getTime() - SESSION_IDLE_MS), now);
  if (!row) return undefined;
  return {
    id: row.id,
    logLevel: parseLogLevel(row.log_level),
    client: {
      protocolVersion: row.protocol_version,
      capabilities: row.client_capabilities ?? {},
      clientInfo: row.client_info ?? {},
    },
  };
}

/** Stores the logging level the session's client asked for; false when the session is gone. */
export const setLogLevel = (ctx: Pick<ServiceContext, 'db'>, principal: McpPrincipal, id: string, level: string) =>
  setSessionLogLevel(ctx.db, principal.keyId, id, level);

export const closeSession = (ctx: Pick<ServiceContext, 'db'>, principal: McpPrincipal, id: string) =>
  SESSION_ID.test(id) ? deleteSession(ctx.db, principal.keyId, id) : Promise.resolve(false);

/** Sessions open now (used within their idle time), of every key: read when metrics are scraped. */
export const countOpenSessions = (ctx: Pick<ServiceContext, 'db' | 'clock'>) =>
  countSessionsUsedSince(ctx.db, new Date(ctx.clock().getTime() - SESSION_IDLE_MS));
