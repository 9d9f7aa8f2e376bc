// The one error family of the service and the one middleware that renders it as the envelope
// {success:false, error, code, message, details?}. Services throw these; nothing else writes errors.
// Codes are the ones the contract names (KnownErrorCode), each with the status the contract gives
// it (STATUS_OF, both generated from spec/common/errors.tsp). Ground floor: imports no wing or adapter.
import { STATUS_CODES } from 'node:http';
import type { ErrorRequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { type KnownErrorCode, STATUS_OF } from './error-codes.gen.js';

export { type KnownErrorCode, STATUS_OF };
export type Details = Record<string, unknown>;

/** The HTTP status the contract gives the code `C`. */
export type StatusOf<C extends KnownErrorCode> = (typeof STATUS_OF)[C];
/** The codes the contract answers with the status `S`. */
export type CodeWithStatus<S extends number> = {
  [C in KnownErrorCode]: StatusOf<C> extends S ? C : never;
}[KnownErrorCode];

/**
 * An error with a code the contract names. `status` must be the one the contract gives `code`
 * (the compiler checks it: `new AppError(404, 'CONFLICT', ...)` does not compile).
 */
export class AppError<C extends KnownErrorCode = KnownErrorCode> extends Error {
  constructor(
    readonly status: StatusOf<C>,
    readonly code: C,
    message: string,
    readonly details?: Details,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export interface FieldError {
  path: string;
  message: string;
}

export class ValidationError extends AppError<CodeWithStatus<400>> {
  constructor(message: string, errors?: FieldError[], code: CodeWithStatus<400> = 'INVALID_REQUEST') {
    super(STATUS_OF[code], code, message, errors ? { errors } : undefined);
  }
}
/** Throws one ValidationError naming every field error, when there are any ("Invalid <what>: ..."). */
export function refuseIfAny(errors: FieldError[], what = 'request'): void {
  if (errors.length > 0) {
    throw new ValidationError(`Invalid ${what}: ${errors[0]!.path} ${errors[0]!.message}.`, errors);
  }
}

export class AuthError extends AppError<CodeWithStatus<401>> {
  constructor(code: CodeWithStatus<401>, message: string) {
    super(STATUS_OF[code], code, message);
  }
}
export class ForbiddenError extends AppError<CodeWithStatus<403>> {
  constructor(code: CodeWithStatus<403>, message: string, details?: Details) {
    super(STATUS_OF[code], code, message, details);
  }
}
export class NotFoundError extends AppError<'NOT_FOUND'> {
  constructor(message: string) {
    super(STATUS_OF.NOT_FOUND, 'NOT_FOUND', message);
  }
}
export class ConflictError extends AppError<'CONFLICT'> {
  constructor(
    message: string,
    details?: Details,
    /** Seconds after which the same request may succeed (the Retry-After header), when the clash is passing. */
    readonly retryAfter?: number,
  ) {
    super(STATUS_OF.CONFLICT, 'CONFLICT', message, details);
  }
}
export class NotImplementedError extends AppError<'NOT_IMPLEMENTED'> {
  constructor(what: string) {
    super(STATUS_OF.NOT_IMPLEMENTED, 'NOT_IMPLEMENTED', `${what} is not available in this version of Tally yet.`);
  }
}

/** Too many requests at once (429 RATE_LIMIT_EXCEEDED); `Retry-After` says when to try again. */
export class RateLimitError extends AppError<'RATE_LIMIT_EXCEEDED'> {
  constructor(
    message: string,
    /** Seconds to wait before trying again. */
    readonly retryAfter: number,
    details?: Details,
  ) {
    super(STATUS_OF.RATE_LIMIT_EXCEEDED, 'RATE_LIMIT_EXCEEDED', message, { ...details, retry_after: retryAfter });
  }
}

/** The database (or another store a request needs) cannot be reached; the client may retry. */
export class ServiceUnavailableError extends AppError<'SERVICE_UNAVAILABLE'> {
  constructor(
    message = 'The database cannot be reached right now. Retry in a few seconds.',
    /** Seconds to wait before trying again (the Retry-After header; 5 when not given). */
    readonly retryAfter?: number,
  ) {
    super(STATUS_OF.SERVICE_UNAVAILABLE, 'SERVICE_UNAVAILABLE', message);
  }
}

/**
 * A query ran past its time limit and was stopped (400 QUERY_TIMEOUT): the one timeout error, thrown
 * by the sandbox executors, the metric queries and every other statement run under a timeout.
 */
export class QueryTimeoutError extends AppError<'QUERY_TIMEOUT'> {
  constructor(readonly timeoutMs: number) {
    super(
      STATUS_OF.QUERY_TIMEOUT,
      'QUERY_TIMEOUT',
      `The query ran longer than ${timeoutMs} ms and was stopped. Narrow it down (a shorter time range, fewer joins) and try again.`,
    );
  }
}

/** Whether a database error is PostgreSQL's query_canceled (57014): a statement timeout fired. */
export function isStatementTimeout(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '57014';
}

// Error codes and messages of a database that is down, restarting, gone or out of connections
// (node-postgres, knex's pool, PGlite), as opposed to a query that failed on its own terms.
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '3D000', // invalid_catalog_name: the database was dropped
  '53300', // too_many_connections
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);
const UNAVAILABLE_MESSAGE =
  /Connection terminated|Unable to acquire a connection|Timeout acquiring a connection|PGlite is closed|Client has encountered a connection error|Connection ended|aborted due to pool destroy/i;

/** True when `err` says the database could not be reached, rather than that a query was wrong. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; name?: unknown; message?: unknown; errors?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && UNAVAILABLE_CODES.has(e.code)) return true;
  if (e.name === 'KnexTimeoutError') return true;
  if (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  return Array.isArray(e.errors) && e.errors.length > 0 && e.errors.every(isDatabaseUnavailable);
}

/** The body of an error response; `status` is the one the contract gives `code`. */
export function envelope<C extends KnownErrorCode>(status: StatusOf<C>, code: C, message: string, details?: Details) {
  return {
    success: false as const,
    error: STATUS_CODES[status] ?? 'Error',
    code,
    message,
    ...(details === undefined ? {} : { details }),
  };
}

interface ValidatorItem {
  path?: string;
  message?: string;
  errorCode?: string;
}

function describeValidatorItem(item: ValidatorItem): FieldError {
  const path = (item.path ?? '')
    .replace(/^[./]?(body|query|params|headers|path)\b/, (_, part: string) =>
      part === 'params' ? '/path' : `/${part}`,
    )
    .replace(/\./g, '/');
  let message = item.message ?? 'is invalid';
  if (item.errorCode === 'not.openapi.validation' || message === 'must NOT be valid') {
    message = 'is not a field of this request';
  } else if (item.errorCode === 'additionalProperties.openapi.validation') {
    message = 'has a field that is not part of this request';
  } else if (message.startsWith('must match pattern') && message.includes('[Hh][Tt][Tt][Pp][Ss]?:')) {
    // WebPageUrl and the referrer (spec/website/models.tsp)
    message = 'must be an http: or https: URL (javascript:, data:, file: and other schemes are refused)';
  } else if (message === 'must match pattern "^[!-~]+$"') {
    message = 'must be printable ASCII without spaces (percent-encode other characters)';
  } else if (message === 'must match format "date"') {
    message = 'must be a real calendar date written YYYY-MM-DD (for example 2026-02-28; 2026-02-30 does not exist)';
  } else if (message === 'must match format "date-time"') {
    message =
      'must be a real date and time in ISO 8601 with a time zone (for example 2026-02-28T09:30:00Z; 2026-02-30 does not exist)';
  }
  return { path, message };
}

function missingCredentialMessage(path: string): string {
  if (path === '/mcp' || path.startsWith('/mcp/'))
    return 'Send your MCP API key in the X-MCP-API-Key header (or as Authorization: Bearer <key>).';
  if (path.startsWith('/admin/')) return 'Send the admin token as Authorization: Bearer <token>.';
  return 'Send your API key as Authorization: Bearer <key>.';
}

/** Where an error happened: the request, and why its credential was refused if it was. */
export interface ErrorSite {
  method: string;
  path: string;
  authFailure?: AppError | null;
}

/** Turns anything thrown into (status, code, message, details) without leaking internals. */
export function toAppError(err: unknown, req: ErrorSite): AppError {
  if (err instanceof AppError) return err;
  // A security handler refused the request; the validator's own error has lost the reason.
  if (req.authFailure) return req.authFailure;
  const e = err as {
    status?: number;
    statusCode?: number;
    type?: string;
    code?: unknown;
    errors?: ValidatorItem[];
    message?: string;
  };
  if (e?.type === 'entity.parse.failed') {
    return new ValidationError('The request body is not valid JSON.');
  }
  if (e?.type === 'entity.too.large') {
    return new AppError(
      STATUS_OF.PAYLOAD_TOO_LARGE,
      'PAYLOAD_TOO_LARGE',
      'The request body is larger than the 1 MB this endpoint accepts.',
    );
  }
  if (e?.type === 'charset.unsupported' || e?.type === 'encoding.unsupported') {
    return new ValidationError('Send the body as UTF-8 JSON.');
  }
  const status = e?.status ?? e?.statusCode;
  // The JSON parser could not inflate a body sent with Content-Encoding (zlib's Z_DATA_ERROR, ...).
  if (status === 400 && typeof e?.code === 'string' && e.code.startsWith('Z_')) {
    return new ValidationError('The request body is not valid for its Content-Encoding (gzip, deflate or br).', [
      { path: '/headers/content-encoding', message: 'does not match the body' },
    ]);
  }
  if (Array.isArray(e?.errors) && typeof status === 'number') {
    // express-openapi-validator
    if (status === 400) {
      const errors = e.errors.map(describeValidatorItem);
      const first = errors[0];
      const summary = first
        ? `${first.path || 'request'} ${first.message}`
        : 'the request does not match the API contract';
      return new ValidationError(`Invalid request: ${summary}.`, errors);
    }
    if (status === 401 || status === 403) {
      return new AuthError('MISSING_AUTH', missingCredentialMessage(req.path));
    }
    if (status === 404) return new NotFoundError(`No endpoint ${req.method} ${req.path}.`);
    if (status === 405) {
      return new AppError(
        STATUS_OF.METHOD_NOT_ALLOWED,
        'METHOD_NOT_ALLOWED',
        `${req.method} is not allowed on ${req.path}.`,
      );
    }
    if (status === 500 && e.errors.some((i) => i.path?.startsWith('/response') || i.path?.startsWith('.response'))) {
      // Only raised when responses are validated strictly (tests): the server broke its own contract.
      return new AppError(
        STATUS_OF.RESPONSE_CONTRACT_VIOLATION,
        'RESPONSE_CONTRACT_VIOLATION',
        'The response does not match the API contract.',
        { errors: e.errors.map(describeValidatorItem) },
      );
    }
    if (status === 415) {
      return new ValidationError('Send the body as JSON with Content-Type: application/json.', [
        { path: '/headers/content-type', message: 'must be application/json' },
      ]);
    }
  }
  if (isDatabaseUnavailable(err)) return new ServiceUnavailableError();
  return new AppError(
    STATUS_OF.INTERNAL_ERROR,
    'INTERNAL_ERROR',
    'Something went wrong on our side. The request id in X-Request-Id helps us find it.',
  );
}

const RATE_LIMIT_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];

/**
 * Makes the headers of a 429 or 503 agree with it: Retry-After always (from `details.retry_after`
 * when the error has one; a passing 409 CONFLICT says its own); and X-RateLimit-* (which describe the per-minute request limit) only
 * when that limit is what refused the request. A 429 for another reason (too many open MCP
 * sessions, too many SQL queries at once) drops them rather than show requests remaining.
 */
export function settleRetryHeaders(res: Response, error: AppError): void {
  if (error instanceof ConflictError && error.retryAfter !== undefined) {
    res.setHeader('Retry-After', String(error.retryAfter));
  }
  if (error.status === 503 && !res.getHeader('Retry-After')) {
    const seconds = error instanceof ServiceUnavailableError ? error.retryAfter : undefined;
    res.setHeader('Retry-After', String(seconds ?? 5));
  }
  if (error.status !== 429) return;
  if (!res.getHeader('Retry-After')) {
    const seconds = Number(error.details?.retry_after);
    res.setHeader('Retry-After', String(Number.isFinite(seconds) && seconds >= 1 ? Math.ceil(seconds) : 1));
  }
  if (Number(res.getHeader('X-RateLimit-Remaining') ?? 0) > 0) {
    for (const header of RATE_LIMIT_HEADERS) res.removeHeader(header);
  }
}

/** What the error middleware reads of the request context (http/context.ts) in res.locals.ctx. */
interface ErrorContext {
  log: Logger;
  authFailure: AppError | null;
}

/** The paths of a validation error's fields (`/body/properties/plan`): where, never what. */
function fieldPaths(error: AppError): string[] | undefined {
  const errors = error.details?.errors;
  return Array.isArray(errors) ? errors.slice(0, 10).map((e) => String((e as FieldError).path)) : undefined;
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const context = res.locals.ctx as ErrorContext | undefined;
    const appError = toAppError(err, { method: req.method, path: req.path, authFailure: context?.authFailure });
    const log = context?.log ?? logger;
    if (appError.status >= 500) log.error({ err }, 'request failed');
    // Not the message: it may quote the request (a refused SQL statement's values, an identifier).
    else log.debug({ code: appError.code, status: appError.status, fields: fieldPaths(appError) }, 'request refused');
    if (res.headersSent) return;
    settleRetryHeaders(res, appError);
    res.status(appError.status).json(envelope(appError.status, appError.code, appError.message, appError.details));
  };
}
