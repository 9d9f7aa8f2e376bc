// What a tool may say to the client while it runs, on the response stream of the call: log
// messages (notifications/message) at or above the level the session set, and a question to the
// person at the client (elicitation/create, form mode) when the client declared it can ask one.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type {
  ElicitRequestFormParams,
  LoggingLevel,
  ServerNotification,
  ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { canConfirm } from './client-hello.js';
import { isLogged } from './logging.js';
import type { SessionState } from './sessions.js';

/** What the person did with a confirmation; `timeout` when no answer came in time. */
export type Confirmation = 'accept' | 'decline' | 'cancel' | 'timeout';

export interface ToolTalk {
  /** Sends a log message to the client when the session's level lets it through. */
  log(level: LoggingLevel, message: string, data?: Record<string, unknown>): Promise<void>;
  /** Whether the client declared it can show a form to the person (elicitation). */
  readonly canConfirm: boolean;
  /**
   * Asks the person; resolves with what they did (never throws for a refusal or a timeout). A form
   * accepted with its `confirm` field turned off counts as a decline.
   */
  confirm(message: string, schema: ElicitRequestFormParams['requestedSchema']): Promise<Confirmation>;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** A tool that says nothing (the documentation's listing, tests of tools in-process). */
export const SILENT: ToolTalk = {
  log: async () => {},
  canConfirm: false,
  confirm: async () => 'cancel',
};

export function toolTalk(
  server: McpServer,
  session: SessionState | undefined,
  extra: Extra,
  { logger, timeoutMs }: { logger: Logger; timeoutMs: number },
): ToolTalk {
  return {
    async log(level, message, data = {}) {
      if (!session || !isLogged(session.logLevel, level)) return;
      await extra
        .sendNotification({
          method: 'notifications/message',
          params: { level, logger: 'tally', data: { message, ...data } },
        })
        .catch((err) => logger.debug({ err: (err as Error).message }, 'could not send an MCP log message'));
    },
    canConfirm: session !== undefined && canConfirm(server),
    async confirm(message, requestedSchema) {
      try {
        const answer = await server.server.elicitInput(
          { mode: 'form', message, requestedSchema },
          { relatedRequestId: extra.requestId, timeout: timeoutMs, signal: extra.signal },
        );
        if (answer.action === 'accept' && answer.content?.confirm === false) return 'decline';
        return answer.action;
      } catch (err) {
        logger.info({ err: (err as Error).message }, 'MCP confirmation not answered');
        return 'timeout';
      }
    },
  };
}
