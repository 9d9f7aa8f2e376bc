// Logging to the client (MCP `logging` capability): logging/setLevel stores the level the client
// wants with its session, so every request and every instance reads it back from there with the
// session. `isLogged` is the gate for messages sent to the client: nothing below that level, and
// `info` and above until the client sets one (tools send the SQL they ran at `debug`).
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  ErrorCode,
  type LoggingLevel,
  LoggingLevelSchema,
  McpError,
  SetLevelRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { McpPrincipal } from '../admin/keys.js';
import type { ServiceContext } from '../context.js';
import { parseLogLevel, type SessionState, setLogLevel } from './sessions.js';

/** The levels from least to most severe (RFC 5424 names, as the protocol uses them). */
export const LOG_LEVELS: readonly LoggingLevel[] = LoggingLevelSchema.options;

/** The level a session gets until its client sets one: what a call did (info) and worse, not the SQL it ran (debug). */
export const DEFAULT_LOG_LEVEL: LoggingLevel = 'info';

/** Whether a message of `level` reaches a client that asked for `threshold` (null: the default level). */
export function isLogged(threshold: LoggingLevel | null, level: LoggingLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold ?? DEFAULT_LOG_LEVEL);
}

/** setLevel with any `level`, so that an unknown one is refused here as invalid params (-32602). */
const LenientSetLevel = SetLevelRequestSchema.extend({ params: z.looseObject({ level: z.unknown() }) });

/** Answers logging/setLevel by storing the level with the session. */
export function handleSetLevel(server: McpServer, ctx: ServiceContext, principal: McpPrincipal, session: SessionState) {
  server.server.setRequestHandler(LenientSetLevel, async (request) => {
    const level = parseLogLevel(request.params.level);
    if (!level) {
      throw new McpError(ErrorCode.InvalidParams, `level must be one of ${LOG_LEVELS.join(', ')}.`);
    }
    await setLogLevel(ctx, principal, session.id, level);
    session.logLevel = level;
    return {};
  });
}
