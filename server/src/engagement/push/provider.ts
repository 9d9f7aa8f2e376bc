// The one interface every push adapter implements, the error an adapter throws when the provider
// refuses or fails, and the HTTP helper the adapters share (timeouts, no redirects). A refusal is
// explained in our own words from the provider's status: the provider's reply is never passed on
// to callers (it may hold anything, including secrets or an internal service's answer); a short,
// scrubbed excerpt is kept for the server log only.
import type { AppRow } from '../../storage/tenancy.js';
import type { UserRow } from '../../storage/users.js';

export type ProviderKind = 'wonderpush' | 'onesignal' | 'webpush' | 'webhook';

/** The user fields adapters use. */
export type PushUser = Pick<UserRow, 'id' | 'external_id'>;

export interface PushMessage {
  app: AppRow;
  user: PushUser;
  /** Our delivery id, for providers that carry it (webhook body, Web Push payload). */
  deliveryId: string;
  /**
   * The key a provider with idempotency uses to recognise a repeat of this send (the delivery id):
   * a retry or the sweeper's resend carries the same key, so the user gets one notification.
   */
  idempotencyKey: string;
  title: string;
  message: string;
  /** Our tracked click link (never the caller's action_url), or undefined. */
  actionUrl?: string;
}

export interface PushResult {
  /** The provider's id of the message, when it returns one. */
  providerMessageId: string | null;
  /** Devices or subscriptions the provider reported as targeted. */
  recipients: number;
  /** True when the provider confirmed it accepted the message for delivery (DESIGN §9). */
  delivered: boolean;
}

/** One notification for many users (providers that target several external ids per call). */
export interface PushBatch {
  app: AppRow;
  users: PushUser[];
  /** Our id of the batch: its tracked click link is /v1/r/{batchId}; also its idempotency key. */
  batchId: string;
  title: string;
  message: string;
  actionUrl?: string;
}

export interface BatchResult {
  providerMessageId: string | null;
  /** True when the provider confirmed it accepted the message for delivery. */
  delivered: boolean;
  /** External ids the provider reported it could not target (the rest were sent). */
  failedExternalIds: string[];
}

export interface PushProvider {
  readonly kind: ProviderKind;
  /**
   * True when the provider recognises a repeated idempotency key and sends nothing new (OneSignal;
   * our webhook, whose receiver is told to): a send whose answer was lost can be repeated safely.
   */
  readonly idempotent: boolean;
  send(message: PushMessage): Promise<PushResult>;
  /** Providers that take many recipients per call: the most per call, and the call. */
  readonly maxRecipientsPerCall?: number;
  sendMany?(batch: PushBatch): Promise<BatchResult>;
}

/**
 * The provider refused the message or could not be reached. `status` is null without an answer;
 * `reason` is ours and may be shown to callers; `detail` (an excerpt of the provider's reply,
 * secrets removed) is for the server log only.
 */
/** Why a send failed, when it is not a plain refusal: counted apart in campaign figures. */
export type FailureKind = 'no_device' | 'subscription_gone';

export class ProviderError extends Error {
  /** How long the provider asked us to wait before trying again (its Retry-After), if it did. */
  retryAfterMs: number | null = null;
  /** `no_device`: the user has nothing to receive it; `subscription_gone`: every subscription was pruned. */
  kind: FailureKind | null = null;

  constructor(
    readonly provider: ProviderKind,
    readonly status: number | null,
    readonly reason: string,
    readonly detail?: string,
  ) {
    super(reason);
  }
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3); null otherwise. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d{1,9}$/.test(v)) return Number(v) * 1000;
  if (!/^[A-Za-z]{3}, /.test(v)) return null; // an HTTP date starts with its day name
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

const TIMEOUT_MS = 10_000;
const MAX_REASON = 300;

export interface HttpAnswer {
  status: number;
  headers: Headers;
  text: string;
  json: unknown;
}

/** One HTTP request to a provider; network failures and timeouts become ProviderError(null). */
export async function request(
  provider: ProviderKind,
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string | Uint8Array<ArrayBuffer> },
  secrets: string[] = [],
): Promise<HttpAnswer> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    const why = (err as Error)?.name === 'TimeoutError' ? `no answer within ${TIMEOUT_MS / 1000} s` : describe(err);
    throw new ProviderError(provider, null, scrub(`The ${provider} API could not be reached: ${why}.`, secrets));
  }
  const text = await response.text().catch(() => '');
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  return { status: response.status, headers: response.headers, text, json };
}

function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (err as Error)?.message ?? 'network error';
}

/** Removes secrets from a provider-supplied text and bounds its length. */
export function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s) out = out.split(s).join('[redacted]');
  return out.length > MAX_REASON ? `${out.slice(0, MAX_REASON - 1)}…` : out;
}

const NAMES: Record<ProviderKind, string> = {
  wonderpush: 'WonderPush',
  onesignal: 'OneSignal',
  webpush: 'The push service',
  webhook: 'The webhook receiver',
};

/** Our explanation of a refusal with this HTTP status. */
export function refusalReason(provider: ProviderKind, status: number): string {
  const name = NAMES[provider];
  if (status === 401 || status === 403) {
    return `${name} refused the credentials (HTTP ${status}): check the token, key or secret configured for this app with tally push configure.`;
  }
  if (status === 404) return `${name} answered 404: check the base URL and app id configured for this app.`;
  if (status === 400 || status === 422) return `${name} rejected the request as invalid (HTTP ${status}).`;
  if (status === 429) return `${name} is rate limiting requests (HTTP 429); try again later.`;
  if (status >= 500) return `${name} failed on its side (HTTP ${status}); try again later.`;
  if (status >= 300 && status < 400) {
    return `${name} answered with a redirect (HTTP ${status}), which Tally does not follow: check the configured URL.`;
  }
  return `${name} did not accept the notification (HTTP ${status}).`;
}

/** The refusal of an answer: our reason, and an excerpt of the reply (secrets removed) for the log. */
export function refusal(provider: ProviderKind, answer: HttpAnswer, secrets: string[], reason?: string): ProviderError {
  const err = new ProviderError(
    provider,
    answer.status,
    reason ?? refusalReason(provider, answer.status),
    scrub(answer.text.trim(), secrets) || undefined,
  );
  err.retryAfterMs = parseRetryAfter(answer.headers.get('retry-after'));
  return err;
}

export const isSuccess = (status: number) => status >= 200 && status < 300;

export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
