// The HTTP side of MCP v2 (Streamable HTTP, protocol 2025-11-25), after the origin and the key
// are checked:
//  - POST initialize opens a session, stored in the database (sessions.ts: 50 per key, the least
//    recently used idle one evicted at the cap, 429 with Retry-After when none is idle), and
//    answers with its id in the result (`transport.sessionId`) and in the Mcp-Session-Id and
//    X-MCP-Session-Id headers;
//  - any other POST needs an open session of the same key in either header (400 without one,
//    404 for an unknown, expired or evicted one);
//  - GET with Accept: text/event-stream is 405 (no server-initiated stream is offered);
//  - DELETE closes the session.
// Each request runs on a fresh server and a stateless SDK transport, so a session opened on one
// instance is served by any other (the session record is the only state).
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import express, { type Request, type Response } from 'express';
import { AppError, settleRetryHeaders } from '../errors.js';
import { inputViolations } from '../input-rules.js';
import type { ServiceContext } from '../services/context.js';
import type { McpPrincipal } from '../services/keys.js';
import { createMcpServer } from './server.js';
import { closeSession, openSession, resumeSession, type SessionState } from './sessions.js';

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

/** Serves one JSON-RPC request of an authenticated MCP key. */
export async function serveMcp(ctx: ServiceContext, principal: McpPrincipal, req: Request, res: Response) {
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
      code: 'INVALID_REQUEST',
      errors: violations,
    });
  }
  const messages = Array.isArray(body) ? body : [body];
  const initialize = messages.find((m) => (m as { method?: unknown })?.method === 'initialize') as
    | { params?: { protocolVersion?: string; capabilities?: object; clientInfo?: object } }
    | undefined;

  let session: SessionState;
  if (initialize) {
    try {
      const id = await openSession(ctx, principal, {
        protocolVersion: String(initialize.params?.protocolVersion ?? ''),
        capabilities: { ...(initialize.params?.capabilities ?? {}) },
        clientInfo: { ...(initialize.params?.clientInfo ?? {}) },
      });
      session = { id, logLevel: null };
    } catch (err) {
      if (err instanceof AppError && err.status === 429) {
        settleRetryHeaders(res, err);
        return jsonRpcError(res, 429, -32000, err.message, { code: err.code, ...err.details });
      }
      throw err;
    }
  } else {
    const id = sessionHeader(req);
    if (!id) {
      return jsonRpcError(
        res,
        400,
        -32000,
        'Call initialize first, then send its session id in the Mcp-Session-Id header.',
      );
    }
    const resumed = await resumeSession(ctx, principal, id);
    if (!resumed) {
      return jsonRpcError(
        res,
        404,
        -32001,
        'Session not found: it was closed, expired or replaced by a newer one. Call initialize again.',
      );
    }
    session = resumed;
  }
  setSessionHeaders(res, session.id);
  const server = createMcpServer(ctx, principal, session, Boolean(initialize));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}
