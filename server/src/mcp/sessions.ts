// MCP sessions: opened by initialize, carried by the MCP-Session-Id (or X-MCP-Session-Id) header,
// closed by DELETE /mcp or after 30 minutes without use. They live in the database, so any
// instance serves any session, and a key holds at most 20 open at once.
import { randomUUID } from 'node:crypto';
import { AppError } from '../errors.js';
import type { ServiceContext } from '../services/context.js';
import type { McpPrincipal } from '../services/keys.js';
import {
  countOpenSessions,
  deleteSession,
  insertSession,
  type McpSessionRow,
  touchSession,
} from '../storage/mcp-sessions.js';

export const SESSION_IDLE_MS = 30 * 60_000;
export const MAX_SESSIONS_PER_KEY = 20;

export class TooManySessionsError extends AppError {
  constructor(open: number) {
    super(
      429,
      'RATE_LIMIT_EXCEEDED',
      `This MCP key already has ${open} open sessions, the most it may hold (${MAX_SESSIONS_PER_KEY}). Close one (DELETE /mcp) or let it expire after 30 minutes without use.`,
      { reason: 'sessions', limit: MAX_SESSIONS_PER_KEY, open },
    );
  }
}

export async function openSession(
  ctx: Pick<ServiceContext, 'db' | 'clock'>,
  principal: McpPrincipal,
  client: { protocolVersion: string; capabilities: Record<string, unknown>; clientInfo: Record<string, unknown> },
): Promise<string> {
  const now = ctx.clock();
  const open = await countOpenSessions(ctx.db, principal.keyId, new Date(now.getTime() - SESSION_IDLE_MS));
  if (open >= MAX_SESSIONS_PER_KEY) throw new TooManySessionsError(open);
  const id = randomUUID();
  await insertSession(ctx.db, {
    id,
    key_id: principal.keyId,
    organization_id: principal.organizationId,
    protocol_version: client.protocolVersion,
    client_capabilities: client.capabilities,
    client_info: client.clientInfo,
    created_at: now,
  });
  return id;
}

/** The key's session with this id if it is still open (and marks it used); undefined otherwise. */
export async function useSession(
  ctx: Pick<ServiceContext, 'db' | 'clock'>,
  principal: McpPrincipal,
  id: string,
): Promise<McpSessionRow | undefined> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  const now = ctx.clock();
  return touchSession(ctx.db, principal.keyId, id, new Date(now.getTime() - SESSION_IDLE_MS), now);
}

export const closeSession = (ctx: Pick<ServiceContext, 'db'>, principal: McpPrincipal, id: string) =>
  /^[0-9a-f-]{36}$/i.test(id) ? deleteSession(ctx.db, principal.keyId, id) : Promise.resolve(false);
