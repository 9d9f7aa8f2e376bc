// Builds the Express application: request ids and logs, body parsing, contract validation
// (requests always, responses strictly in tests), the operation handlers, and one error renderer.
import express, { type Express } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { loadContract } from './contract.js';
import { envelope, errorHandler, NotFoundError } from './errors.js';
import { resolveApp } from './http/access.js';
import { mcpBearerKey, securityHandlers } from './http/auth.js';
import { requestContextMiddleware } from './http/context.js';
import { handlers } from './http/handlers.js';
import { homeRouter } from './http/home.js';
import { idempotencyKeys } from './http/idempotency.js';
import { inputRules } from './http/input-rules.js';
import { mcpJsonRpcRouter } from './http/mcp-jsonrpc.js';
import { mcpOriginGuard } from './http/mcp-origin.js';
import { metricsHandler } from './http/metrics.js';
import { operationLabeler } from './http/operation-label.js';
import { dispatch, operationId } from './http/operations.js';
import { opsRouter } from './http/ops.js';
import { formEncodedSpaces } from './http/query-spaces.js';
import { memoiseRouteCompilation } from './http/route-cache.js';
import { sdkRouter } from './http/sdk.js';
import { requestValidation, validatorFormats } from './http/validator-options.js';
import { websiteGate } from './http/website-gate.js';
import type { Tally } from './tally.js';

/** The Express app of one composition root: its service context, rate limiter and MCP answer relay. */
export function createApp(tally: Tally): Express {
  const { config, database, logger, context: ctx, rateLimiter } = tally;
  const { yaml, doc } = loadContract();
  memoiseRouteCompilation();
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'extended');
  // No automatic ETags: they made conditional GETs answer 304, which the contract does not
  // declare (the browser's revalidation of GET /v1/website/config did), and cost a hash a response.
  // The SDK script keeps its own ETag and 304 (http/sdk.ts).
  app.set('etag', false);

  // request id, logger, the context later layers fill in; the request's log line and HTTP metrics
  app.use(requestContextMiddleware(logger, { label: operationLabeler(doc), metrics: tally.metrics }));
  app.use(formEncodedSpaces); // `+` in a query value is a space, whoever reads it (http/query-spaces.ts)

  app.use(opsRouter(database, yaml, doc, metricsHandler(ctx.db, config, rateLimiter, tally.metrics, ctx.clock)));
  app.use(homeRouter()); // `/` and the guides
  app.use(mcpOriginGuard(config)); // foreign web origins and, on loopback, foreign host names: 403 on /mcp
  app.use(mcpBearerKey); // the MCP key may come as Authorization: Bearer
  app.use(mcpJsonRpcRouter(ctx, tally.mcpTalkBack, rateLimiter));
  app.use(sdkRouter(config, logger));
  app.use(express.json({ limit: '1mb', type: ['application/json', 'application/*+json'] }));
  app.use(websiteGate(ctx, rateLimiter)); // CORS and rate limits of /v1/website/*, before validation
  // The tracked push link needs no credential: limited per client IP, before anything is looked up.
  app.use(
    '/v1/r',
    rateLimiter.middleware('clicks', (req) => req.ip ?? ''),
  );
  app.use(inputRules(doc)); // NUL bytes, lone surrogates, non-finite numbers, nesting: before anything reads values
  app.use(
    OpenApiValidator.middleware({
      apiSpec: doc as never,
      // http/validator-options.ts: the same for the ingestion listener's validators
      validateRequests: requestValidation(),
      formats: validatorFormats(),
      validateResponses: config.strictResponses
        ? true
        : {
            onError: (err: Error, _body: unknown, req: express.Request) =>
              logger.warn({ err: err.message, operation: operationId(req) }, 'response does not match the contract'),
          },
      validateSecurity: { handlers: securityHandlers(ctx, config, rateLimiter) },
      ignoreUndocumented: false,
    }),
  );
  app.use(resolveApp(ctx));
  app.use(idempotencyKeys(ctx)); // a repeat of a write sent with an Idempotency-Key gets the first answer
  app.use(dispatch(handlers(ctx)));
  app.use((req) => {
    throw new NotFoundError(`No endpoint ${req.method} ${req.path}.`);
  });
  app.use(errorHandler(logger));
  return app;
}

export { envelope };
