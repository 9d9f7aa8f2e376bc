// Every failed call returns Tally's error envelope in `error`, also when no envelope came back: a
// network failure, a timeout, an aborted call or an answer that is not JSON (a proxy's error page)
// become envelopes with a code of the client's own (ClientErrorCode), so `error.code` is always set.
import { KNOWN_ERROR_CODES, type KnownErrorCode } from './contract.gen.js';
import type { ErrorCode, ErrorResponse } from './gen/types.gen.js';

/** Codes the client itself gives failures that have no answer from Tally. */
export type ClientErrorCode = 'NETWORK_ERROR' | 'TIMEOUT' | 'ABORTED' | 'UNEXPECTED_RESPONSE';

/**
 * The `error` of a failed call: Tally's envelope. `code` is one of the contract's codes
 * (`KnownErrorCode`, which narrow in `switch` and `if`), a ClientErrorCode, or a code a later
 * server added (any other string).
 */
export type TallyError = ErrorResponse;
export type TallyErrorCode = ErrorCode;

const known: ReadonlySet<string> = new Set(KNOWN_ERROR_CODES);

/**
 * Whether a code is one the contract names. Comparing `error.code === 'NOT_FOUND'` works without
 * it; this narrows `code` to KnownErrorCode, for a `switch` that the compiler checks.
 */
export function isKnownErrorCode(code: string): code is KnownErrorCode {
  return known.has(code);
}

const envelope = (code: ClientErrorCode, error: string, message: string, details?: object): TallyError => ({
  success: false,
  error,
  code,
  message,
  ...(details ? { details: { ...details } } : {}),
});

/** hey-api error interceptor: leaves envelopes alone and turns everything else into one. */
export function toTallyError(error: unknown, response: Response | undefined, request: Request): unknown {
  if (response) {
    if (error && typeof error === 'object' && 'code' in error) return error;
    const text = typeof error === 'string' ? error : '';
    return envelope('UNEXPECTED_RESPONSE', response.statusText || `HTTP ${response.status}`, text.slice(0, 500), {
      status: response.status,
    });
  }
  const name = error instanceof Error || error instanceof DOMException ? error.name : '';
  const cause = error instanceof Error ? error.message : String(error);
  const target = `${request.method} ${new URL(request.url).pathname}`;
  if (name === 'TimeoutError') return envelope('TIMEOUT', 'Timeout', `No answer to ${target} in time.`, { cause });
  if (request.signal.aborted || name === 'AbortError') {
    return envelope('ABORTED', 'Aborted', `${target} was aborted.`, { cause });
  }
  return envelope('NETWORK_ERROR', 'Network Error', `${target} got no answer: ${cause}`, { cause });
}
