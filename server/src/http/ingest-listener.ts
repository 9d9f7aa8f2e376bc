// The lean path of the two ingestion operations (POST /v1/events and /v1/events/batch): the
// node:http request listener in front of the Express app. It serves those two without Express's
// router and its middleware chain, and hands the app every other request, and any of theirs it
// does not take: a query string or trailing slash, a body that is not plain UTF-8 JSON (another
// content type, a charset, a Content-Encoding), no body at all, or a Content-Length over 1 MB.
//
// Each step is the function the app runs, in the app's order: request id, log line and metrics
// (context.ts); the JSON body (the 1 MB limit, body-parser's rules: an empty body is `{}`, a body
// must start with `{` or `[`); the input rules (input-rules.ts); the credential (the validator's
// header check, then the ApiKeyAuth handler of auth.ts: failed-auth throttle, key cache, rate
// limit); the contract's body schema (ingest-validators.ts); the app (access.ts, from the app
// cache); the handler (events.ts through dispatch); and any error through the one error handler.
// Requests and responses get Express's own request and response prototypes, as the app gives
// them, so `req.ip`, `res.json` and the headers are the app's.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Express, NextFunction, Request, Response } from 'express';
import { loadContract } from '../contract.js';
import { errorHandler } from '../errors.js';
import type { Tally } from '../tally.js';
import { resolveApp } from './access.js';
import { securityHandlers } from './auth.js';
import { requestContextMiddleware } from './context.js';
import { handlers } from './handlers.js';
import { compileIngestValidators, type IngestOperation } from './ingest-validators.js';
import { inputRules } from './input-rules.js';
import { operationLabeler } from './operation-label.js';
import { dispatch } from './operations.js';

/** The body limit of the Express app's JSON parser (app.ts: `express.json({ limit: '1mb' })`). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Plain JSON in UTF-8: what the lean path parses itself; anything else goes to the app. */
const PLAIN_JSON = /^application\/json\s*(?:;\s*charset="?utf-8"?\s*)?$/i;
/** JSON's whitespace: space, tab, line feed, carriage return. */
const JSON_SPACE = new Set([' ', '\t', '\n', '\r']);

/** body-parser's strict mode: the first character that is not JSON whitespace. */
function firstChar(text: string): string | undefined {
  for (const c of text) if (!JSON_SPACE.has(c)) return c;
  return undefined;
}

const noop = () => {};

/** Whether the lean path takes this request's body (its headers alone decide, before any is read). */
function takesBody(req: IncomingMessage): boolean {
  const { headers } = req;
  if (headers['content-encoding'] !== undefined) return false;
  if (!PLAIN_JSON.test(headers['content-type'] ?? '')) return false;
  const length = headers['content-length'];
  if (length === undefined) return headers['transfer-encoding'] !== undefined;
  return /^\d+$/.test(length) && Number(length) <= BODY_LIMIT_BYTES;
}

/** The errors body-parser raises, in the shape toAppError (errors.ts) reads. */
function bodyError(type: 'entity.parse.failed' | 'entity.too.large' | 'request.aborted', status: 400 | 413) {
  return Object.assign(new Error(type), { type, status, expose: true });
}

/** Reads the body as body-parser's JSON parser does (UTF-8, BOM dropped, 1 MB). */
function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Past the limit the rest is read and dropped, and refused once it has all arrived, as
    // body-parser does (the client then reads the answer instead of a reset connection).
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= BODY_LIMIT_BYTES) chunks.push(chunk);
    });
    req.once('aborted', () => reject(bodyError('request.aborted', 400)));
    req.once('error', reject);
    req.once('end', () => {
      if (size > BODY_LIMIT_BYTES) return reject(bodyError('entity.too.large', 413));
      let text = Buffer.concat(chunks, size).toString('utf8');
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      if (text.length === 0) return resolve({});
      const first = firstChar(text);
      if (first !== '{' && first !== '[') return reject(bodyError('entity.parse.failed', 400));
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(bodyError('entity.parse.failed', 400));
      }
    });
  });
}

/** The validator's check of the bearer header, made before its security handler runs. */
function bearerHeaderRefusal(req: IncomingMessage, path: string) {
  const header = req.headers.authorization?.toLowerCase();
  if (header?.includes('bearer')) return null;
  const message = header ? "Authorization header with scheme 'Bearer' required" : 'Authorization header required';
  return { status: 401, errors: [{ path, message }] };
}

type Middleware = (req: Request, res: Response, next: NextFunction) => unknown;

/** The listener: the lean path for the ingestion operations, the Express app for everything else. */
export async function ingestListener(tally: Tally, app: Express): Promise<RequestListener> {
  const { doc } = loadContract();
  const operations = await compileIngestValidators(doc);
  const { context: ctx, config, logger, rateLimiter } = tally;
  const openContext = requestContextMiddleware(logger, { label: operationLabeler(doc), metrics: tally.metrics });
  const rules = inputRules(doc) as Middleware;
  const authenticate = securityHandlers(ctx, config, rateLimiter).ApiKeyAuth;
  const resolve = resolveApp(ctx) as Middleware;
  const handle = dispatch(handlers(ctx)) as Middleware;
  const onError = errorHandler(logger);

  async function serve(req: Request, res: Response, op: IngestOperation): Promise<void> {
    try {
      req.body = await readJson(req);
      rules(req, res, noop);
      const missing = bearerHeaderRefusal(req, op.path);
      if (missing) throw missing;
      await authenticate(req);
      const refused = op.validate(req.body, req.headers);
      if (refused) throw refused;
      await resolve(req, res, noop);
      await handle(req, res, noop);
    } catch (err) {
      onError(err, req, res, noop);
    }
  }

  return (incoming: IncomingMessage, outgoing: ServerResponse) => {
    const op = incoming.method === 'POST' ? operations.get(incoming.url ?? '') : undefined;
    if (!op || !takesBody(incoming)) {
      app(incoming, outgoing);
      return;
    }
    // What Express's app.handle and router do before the first middleware. The server makes its
    // requests and responses with the app's prototypes already (expressMessageClasses, listener.ts).
    const req = (
      Object.getPrototypeOf(incoming) === app.request ? incoming : Object.setPrototypeOf(incoming, app.request)
    ) as Request;
    const res = (
      Object.getPrototypeOf(outgoing) === app.response ? outgoing : Object.setPrototypeOf(outgoing, app.response)
    ) as Response;
    req.res = res;
    req.originalUrl = req.url;
    req.baseUrl = '';
    req.params = {};
    res.req = req;
    res.locals = Object.create(null);
    // What the validator's metadata step leaves for operationId() (operations.ts).
    (req as Request & { openapi: unknown }).openapi = {
      schema: op.schema,
      pathParams: {},
      openApiRoute: op.path,
      expressRoute: op.path,
    };
    openContext(req, res, noop);
    void serve(req, res, op);
  };
}
