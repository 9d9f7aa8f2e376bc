// The Idempotency-Key header of the REST writes (idempotency/idempotency.ts has the rules): after
// the request is validated, authenticated and its app resolved, the key is claimed; a repeat gets
// the stored answer here, without reaching its handler; a new request goes on to its handler, and
// its answer is stored before it is sent, so that a retry arriving after the answer finds it.
import type { NextFunction, Request, Response } from 'express';
import type { ServiceContext } from '../context.js';
import { claimIdempotencyKey, type KeyRun, type StoredAnswer } from '../idempotency/idempotency.js';
import { type RequestContext, requestContext, requireApp, restPrincipal } from './context.js';
import { type OperationId, operationId } from './operations.js';

/** The operations that take an Idempotency-Key (the contract declares the header on these). */
export const IDEMPOTENT_OPERATIONS: ReadonlySet<OperationId> = new Set<OperationId>([
  'Push_send',
  'Audiences_create',
  'Users_upsert',
  'Users_createAlias',
  'Users_replaceId',
]);

/** Headers of an answer that a replay repeats (the request id, rate-limit counters and the like are the retry's own). */
const KEPT_HEADERS = ['content-type', 'location'];

/**
 * Answers stored for replay: every answer the operation gave, except a 400 (the request was
 * invalid or could not be done as sent, e.g. no push provider yet: fix it and send it again under
 * the same key) and a 500 or 503 (a failure the retry may not meet).
 */
const KEPT_STATUS = (status: number) => status !== 400 && status !== 500 && status !== 503;

/** Marks an answer that was stored, not produced for this request. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

export function idempotencyKeys(ctx: ServiceContext) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const operation = operationId(req);
    const key = req.header('idempotency-key');
    if (key === undefined || operation === undefined || !IDEMPOTENT_OPERATIONS.has(operation)) return next();
    const context = requestContext(res);
    const scope = { appId: requireApp(context).id, apiKeyId: restPrincipal(context).keyId, operation, key };
    const claim = await claimIdempotencyKey(ctx, scope, req.body);
    if (claim.kind === 'replay') return replay(res, claim.answer);
    keepAnswer(res, claim.run, context);
    next();
  };
}

function replay(res: Response, answer: StoredAnswer): void {
  res.status(answer.status);
  res.set(answer.headers);
  res.setHeader(REPLAYED_HEADER, 'true');
  res.end(answer.body);
}

type End = (chunk?: unknown, encoding?: unknown, callback?: unknown) => Response;

/**
 * Stores the answer when the handler (or the error renderer) ends the response, then sends it.
 * An answer not kept (KEPT_STATUS), or one written in pieces, drops the claim instead. A failure to store is
 * logged and the answer is sent anyway: the key then stays claimed until its lease ends.
 */
function keepAnswer(res: Response, run: KeyRun, context: RequestContext): void {
  const end = res.end.bind(res) as End;
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  let piecewise = false;
  let settled = false;
  res.write = ((...args: unknown[]) => {
    piecewise = true;
    return write(...args);
  }) as Response['write'];
  res.end = ((chunk?: unknown, encoding?: unknown, callback?: unknown) => {
    if (settled) return end(chunk, encoding, callback);
    settled = true;
    const status = res.statusCode;
    const failed = piecewise || !KEPT_STATUS(status);
    const saved = failed ? run.drop() : run.finish({ status, headers: keptHeaders(res), body: text(chunk, encoding) });
    saved
      .catch((err: unknown) => context.log.error({ err }, 'could not store the answer of an idempotent request'))
      .finally(() => end(chunk, encoding, callback));
    return res;
  }) as Response['end'];
}

function keptHeaders(res: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = res.getHeader(name);
    if (value !== undefined) headers[name] = String(value);
  }
  return headers;
}

function text(chunk: unknown, encoding: unknown): string {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return '';
  if (Buffer.isBuffer(chunk) || chunk instanceof Uint8Array) return Buffer.from(chunk).toString('utf8');
  return Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8').toString(
    'utf8',
  );
}
