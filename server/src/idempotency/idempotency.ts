// Idempotency keys of the REST writes: a request sent with an `Idempotency-Key` runs once; a retry
// with the same key (same API key, same operation, within 24 hours) gets the first answer instead
// of running again. A retry while the first request is still running is refused with 409 CONFLICT
// (Retry-After: 1); the same key with another body is 409 IDEMPOTENCY_KEY_REUSED.
//
// What is stored, following Stripe: the answer of every request the operation ran, its own
// refusals included (404 unknown user, 409 taken, 502 provider refused for good), since running it
// again could act twice or answer differently. Not stored, as Stripe stores no answer to a request
// whose parameters failed validation: requests refused before the operation ran (contract
// validation, authentication, rate limits: the key is never claimed) and every 400 (an invalid
// input the operation found itself, a missing push provider: nothing was done, so the corrected
// request may run under the same key). Unlike Stripe, 500 and 503 are not stored either: the
// claim is dropped so that a retry runs again, which is what the client's retries on 5xx expect.
// A request whose process dies holds its key for LEASE_MS at most; the next retry then runs it.
// The adapter (http/idempotency.ts) decides from the status which answers it keeps.
import { createHash } from 'node:crypto';
import type { ServiceContext } from '../context.js';
import { AppError, ConflictError, STATUS_OF, ValidationError } from '../errors.js';
import { uuidv7 } from '../ids.js';
import type { Db } from '../storage/handle.js';
import {
  claimKey,
  deleteAnswersNaming,
  deleteExpiredKeys,
  dropClaim,
  internalUserIds,
  type KeyScope,
  storeAnswer,
} from './queries/stored-answers.js';

export type { KeyScope };

/** How long a key is remembered after its first request. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * How long a request may hold its key before a retry may take it over: longer than any request
 * takes (a push waits at most about 10 s for its provider, text generation about as long), short
 * enough that a key whose process died is usable again soon.
 */
export const LEASE_MS = 120_000;
/** Printable ASCII without spaces, 1 to 255 characters (as the contract declares). */
const KEY_FORMAT = /^[!-~]{1,255}$/;
/** Body fields that name a user: the answer is linked to them, to be erased with them. */
const USER_FIELDS = ['user_id', 'primary_user_id', 'alias_id', 'new_user_id'] as const;

/** An answer as sent: status, the headers worth repeating, and the body's text. */
export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A run that holds its key: it ends by storing its answer, or by letting the key go. */
export interface KeyRun {
  finish(answer: StoredAnswer): Promise<void>;
  drop(): Promise<void>;
}

export type Claim = { kind: 'run'; run: KeyRun } | { kind: 'replay'; answer: StoredAnswer };

export class IdempotencyKeyReusedError extends AppError<'IDEMPOTENCY_KEY_REUSED'> {
  constructor() {
    super(
      STATUS_OF.IDEMPOTENCY_KEY_REUSED,
      'IDEMPOTENCY_KEY_REUSED',
      'This Idempotency-Key was already used for a different request in the last 24 hours. Use a new key for a new request.',
    );
  }
}

/** Refuses a key the contract does not allow (the validator checks it first; this is the wing's own guard). */
export function checkIdempotencyKey(key: string): void {
  if (!KEY_FORMAT.test(key)) {
    throw new ValidationError(
      'Invalid request: the Idempotency-Key header must be 1 to 255 printable ASCII characters without spaces.',
      [{ path: '/headers/idempotency-key', message: 'must be 1 to 255 printable ASCII characters without spaces' }],
    );
  }
}

/** JSON with object keys sorted, so that the same body sent with its fields in another order matches. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const fingerprintOf = (body: unknown): string =>
  createHash('sha256').update(canonical(body), 'utf8').digest('hex');

function namedUsers(body: unknown): string[] {
  if (body === null || typeof body !== 'object') return [];
  const fields = body as Record<string, unknown>;
  return USER_FIELDS.map((f) => fields[f]).filter((v): v is string => typeof v === 'string' && v.length > 0);
}

/**
 * Claims the key for this request: a run (this request goes ahead and must finish or drop it), the
 * first answer to replay, or a refusal (409) when the key is in use or was used for another body.
 */
export async function claimIdempotencyKey(
  ctx: ServiceContext,
  scope: KeyScope,
  body: unknown,
  attempt = 1,
): Promise<Claim> {
  checkIdempotencyKey(scope.key);
  const now = ctx.clock();
  const runId = uuidv7();
  const fingerprint = fingerprintOf(body);
  const outcome = await claimKey(ctx.db, scope, {
    runId,
    fingerprint,
    now,
    leaseUntil: new Date(now.getTime() + LEASE_MS),
    expiresAt: new Date(now.getTime() + IDEMPOTENCY_WINDOW_MS),
  });
  if (outcome.claimed) return { kind: 'run', run: keyRun(ctx, scope, runId, namedUsers(body)) };
  const row = outcome.row;
  // Gone between the two statements (expired and purged, or dropped by a failed run): run it now.
  if (!row) {
    if (attempt >= 3) throw new Error('An idempotency key kept vanishing while it was claimed.');
    return claimIdempotencyKey(ctx, scope, body, attempt + 1);
  }
  if (row.fingerprint !== fingerprint) throw new IdempotencyKeyReusedError();
  if (row.state === 'running') {
    throw new ConflictError(
      'A request with this Idempotency-Key is still running. Retry in a second to get its answer.',
      { reason: 'idempotency_key_in_use' },
      1,
    );
  }
  return { kind: 'replay', answer: { status: row.status ?? 200, headers: row.headers ?? {}, body: row.body ?? '' } };
}

function keyRun(ctx: ServiceContext, scope: KeyScope, runId: string, users: string[]): KeyRun {
  return {
    async finish(answer) {
      // The users as they are now (a rename or a new user is visible), besides the identifiers sent.
      const subjects = [...new Set([...users, ...(await internalUserIds(ctx.db, scope.appId, users))])];
      await storeAnswer(ctx.db, scope, runId, { ...answer, subjects });
    },
    drop: () => dropClaim(ctx.db, scope, runId),
  };
}

/**
 * Forgets the app's stored answers that name the user (any of `subjects`: the internal id, the
 * external id, aliases), inside the erasure's transaction; returns how many.
 */
export function forgetAnswersAbout(tx: Db, appId: string, subjects: string[]): Promise<number> {
  return subjects.length === 0 ? Promise.resolve(0) : deleteAnswersNaming(tx, appId, subjects);
}

/** Deletes the app's keys older than the window (the purge job); returns how many. */
export function purgeExpiredKeys(db: Db, appId: string, now: Date): Promise<number> {
  return deleteExpiredKeys(db, appId, now);
}
