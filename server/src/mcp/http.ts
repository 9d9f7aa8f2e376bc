// The HTTP side of MCP v2 (Streamable HTTP, protocol 2025-11-25), after the origin and the key
// are checked:
//  - POST initialize opens a session, stored in the database with what the client declared
//    (sessions.ts: 50 per key, the least recently used idle one evicted at the cap, 429 with
//    Retry-After when none is idle), and answers with its id in the result (`transport.sessionId`)
//    and in the Mcp-Session-Id and X-MCP-Session-Id headers;
//  - any other POST needs an open session of the same key in either header (400 without one,
//    404 for an unknown, expired or evicted one);
//  - a POST of answers to requests Tally sent (a person's confirmation) is handed to the call
//    waiting for it, on this instance or, through Redis, on another (talk-back.ts), and gets 202;
//  - a POST with a tools/call answers as a stream (SSE), so that log messages and confirmation
//    requests reach the client while the tool runs; other POSTs answer plain JSON;
//  - GET with Accept: text/event-stream is 405 (no stream outside a request is offered);
//  - DELETE closes the session.
// Each request runs on a fresh server, told what the client declared at initialize (client-hello.ts),
// so a session opened on one instance is served by any other (the session record is the only state).
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express, { type Request, type Response } from 'express';
import type { McpPrincipal } from '../admin/keys.js';
import type { ServiceContext } from '../context.js';
import { AppError, type KnownErrorCode, settleRetryHeaders } from '../errors.js';
import { inputViolations } from '../input-rules.js';
import { replayInitialize } from './client-hello.js';
import { RoutedTransport } from './routed-transport.js';
import { createMcpServer } from './server.js';
import { type ClientHello, closeSession, openSession, resumeSession, type SessionState } from './sessions.js';
import { isClientAnswer, type McpTalkBack } from './talk-back.js';

const parseJson = express.json({ limit: '1mb', type: () => true });

export function jsonRpcError(res: Response, status: number, code: number, message: string, data?: unknown): void {
  res
    .status(status)
    .json({ jsonrpc: '2.0', id: null, error: { code, message, ...(data === undefined ? {} : { data }) } });
}

const sessionHeader = (req: Request) => req.header('mcp-session-id') ?? req.header('x-mcp-session-id');

function setSessionHeaders(res: Response, id: string): void {
  res.setHeader('Mcp-Session-Id', id);
  res.setHeader('X-MCP-Session-Id', id);
  res.setHeader('Access-Control-Expose-Headers', 'Mcp-Session-Id, X-MCP-Session-Id');
}

const NO_SESSION = 'Call initialize first, then send its session id in the Mcp-Session-Id header.';
const SESSION_GONE = 'Session not found: it was closed, expired or replaced by a newer one. Call initialize again.';

type Initialize = { params?: { protocolVersion?: string; capabilities?: object; clientInfo?: object } };

/**
 * The session of this request: a new one for `initialize` (429 when the key has too many), else
 * the one its Mcp-Session-Id header names. Null once the refusal has been answered.
 */
async function sessionFor(
  ctx: ServiceContext,
  principal: McpPrincipal,
  req: Request,
  res: Response,
  initialize: Initialize | undefined,
): Promise<SessionState | null> {
  if (initialize) {
    const client: ClientHello = {
      protocolVersion: String(initialize.params?.protocolVersion ?? ''),
      capabilities: { ...(initialize.params?.capabilities ?? {}) },
      clientInfo: { ...(initialize.params?.clientInfo ?? {}) },
    };
    try {
      return { id: await openSession(ctx, principal, client), logLevel: null, client };
    } catch (err) {
      if (err instanceof AppError && err.status === 429) {
        settleRetryHeaders(res, err);
        jsonRpcError(res, 429, -32000, err.message, { code: err.code, ...err.details });
        return null;
      }
      throw err;
    }
  }
  const id = sessionHeader(req);
  if (!id) {
    jsonRpcError(res, 400, -32000, NO_SESSION);
    return null;
  }
  const resumed = await resumeSession(ctx, principal, id);
  if (!resumed) jsonRpcError(res, 404, -32001, SESSION_GONE);
  return resumed ?? null;
}

/** Serves one JSON-RPC request of an authenticated MCP key. */
export async function serveMcp(
  ctx: ServiceContext,
  talkBack: McpTalkBack,
  principal: McpPrincipal,
  req: Request,
  res: Response,
) {
  if (req.method === 'GET') {
    res.setHeader('Allow', 'POST, DELETE');
    return jsonRpcError(res, 405, -32000, 'This server offers no server-initiated stream; send requests with POST.');
  }
  if (req.method === 'DELETE') {
    const id = sessionHeader(req);
    if (!id) return jsonRpcError(res, 400, -32000, 'Name the session to close in the Mcp-Session-Id header.');
    if (!(await closeSession(ctx, principal, id))) return jsonRpcError(res, 404, -32001, 'Session not found.');
    res.status(200).json({ jsonrpc: '2.0', result: {} });
    return;
  }

  await new Promise<void>((resolve, reject) => parseJson(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
  const body = req.body as unknown;
  // The same input rules as every other surface (NUL bytes, lone surrogates, nesting, numbers).
  const violations = inputViolations(body, '');
  if (violations.length > 0) {
    return jsonRpcError(res, 400, -32602, `Invalid params: ${violations[0]!.path} ${violations[0]!.message}.`, {
      code: 'INVALID_REQUEST' satisfies KnownErrorCode,
      errors: violations,
    });
  }
  const all = Array.isArray(body) ? body : [body];
  const answers = all.filter(isClientAnswer);
  const messages = all.filter((m) => !isClientAnswer(m));
  const initialize = messages.find((m) => (m as { method?: unknown })?.method === 'initialize') as
    | Initialize
    | undefined;

  const session = await sessionFor(ctx, principal, req, res, initialize);
  if (!session) return;
  for (const answer of answers) {
    if (!(await talkBack.answer(session.id, answer))) {
      ctx.logger.info({ session: session.id, id: answer.id }, 'MCP answer for a request no instance is waiting on');
    }
  }
  if (messages.length === 0) {
    setSessionHeaders(res, session.id);
    res.status(202).end();
    return;
  }
  setSessionHeaders(res, session.id);
  const server = createMcpServer(ctx, principal, session, Boolean(initialize));
  if (!initialize) await replayInitialize(server, session.client);
  const streams = messages.some((m) => (m as { method?: unknown })?.method === 'tools/call');
  const http = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streams });
  const transport = new RoutedTransport(http, talkBack, session.id);
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await http.handleRequest(req, res, Array.isArray(body) ? messages : messages[0]);
}
