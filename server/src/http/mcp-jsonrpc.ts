// The MCP v2 JSON-RPC endpoint (POST /mcp, GET /mcp with Accept: text/event-stream, DELETE /mcp),
// outside the OpenAPI contract. Every call needs a valid MCP key (X-MCP-API-Key, or
// Authorization: Bearer, which http/auth.ts's mcpBearerKey copies there): without one the answer
// is HTTP 401 with a JSON-RPC error body (code -32001), after the same per-IP throttle of failed
// authentications as the other surfaces and the per-key `mcp` rate limit. Authenticated calls
// are served by mcp/http.ts.
import { type NextFunction, type Request, type Response, Router } from 'express';
import { authenticateMcp, type McpPrincipal } from '../admin/keys.js';
import type { ServiceContext } from '../context.js';
import { settleRetryHeaders, toAppError } from '../errors.js';
import { jsonRpcError, serveMcp } from '../mcp/http.js';
import type { McpTalkBack } from '../mcp/talk-back.js';
import { checkCredential } from './auth.js';
import { requestContext } from './context.js';
import { applyDecision, type RateLimiter } from './rate-limit.js';

/** JSON-RPC error code for a missing or refused credential (implementation-defined server error). */
export const JSONRPC_UNAUTHORIZED = -32001;
/** JSON-RPC error code for any other failure before the call is handled. */
const JSONRPC_SERVER_ERROR = -32000;

/** Whether the request is a JSON-RPC call rather than the GET /mcp information resource. */
export function isJsonRpcRequest(req: Request): boolean {
  if (req.method === 'POST' || req.method === 'DELETE') return true;
  return req.method === 'GET' && (req.header('accept') ?? '').includes('text/event-stream');
}

export function mcpJsonRpcRouter(ctx: ServiceContext, talkBack: McpTalkBack, limiter: RateLimiter): Router {
  const router = Router();
  router.all('/mcp', async (req: Request, res: Response, next: NextFunction) => {
    if (!isJsonRpcRequest(req)) return next();
    let principal: McpPrincipal | undefined;
    try {
      await checkCredential(limiter, req, async () => {
        principal = await authenticateMcp(ctx, req.header('x-mcp-api-key'));
        const decision = await limiter.consume('mcp', principal.keyId);
        const refused = decision ? applyDecision(res, decision) : null;
        if (refused) throw refused;
      });
    } catch (err) {
      const error = toAppError(err, req);
      if (error.status >= 500) requestContext(res).log.error({ err }, 'MCP call failed');
      settleRetryHeaders(res, error);
      const unauthorized = error.status === 401;
      res.status(error.status).json({
        jsonrpc: '2.0',
        id: null,
        error: unauthorized
          ? { code: JSONRPC_UNAUTHORIZED, message: error.message }
          : {
              code: JSONRPC_SERVER_ERROR,
              message: error.message,
              data: { code: error.code, ...(error.details ?? {}) },
            },
      });
      return;
    }
    try {
      await serveMcp(ctx, talkBack, principal!, req, res);
    } catch (err) {
      const error = toAppError(err, req);
      if (error.status >= 500) requestContext(res).log.error({ err }, 'MCP call failed');
      if (!res.headersSent) {
        settleRetryHeaders(res, error);
        jsonRpcError(res, error.status, -32603, error.message, { code: error.code });
      }
    }
  });
  return router;
}
