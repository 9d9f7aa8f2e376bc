// The one interface every push adapter implements, the error an adapter throws when the provider
// refuses or fails, and the HTTP helper the adapters share (timeouts, bounded error reasons that
// never echo a secret).
import type { AppRow } from '../storage/tenancy.js';
import type { UserRow } from '../storage/users.js';

export type ProviderKind = 'wonderpush' | 'onesignal' | 'webpush' | 'webhook';

export interface PushMessage {
  app: AppRow;
  user: UserRow;
  /** Our delivery id, for providers that carry it (webhook body, Web Push payload). */
  deliveryId: string;
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

export interface PushProvider {
  readonly kind: ProviderKind;
  send(message: PushMessage): Promise<PushResult>;
}

/** The provider refused the message or could not be reached. `status` is null without an answer. */
export class ProviderError extends Error {
  constructor(
    readonly provider: ProviderKind,
    readonly status: number | null,
    readonly reason: string,
  ) {
    super(reason);
  }
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

/** A readable reason from a provider's error body: its message fields, else the raw text. */
export function reasonOf(answer: HttpAnswer, secrets: string[]): string {
  const body = answer.json as Record<string, unknown> | null;
  const pick = (v: unknown): string | undefined => {
    if (typeof v === 'string' && v) return v;
    if (Array.isArray(v)) return v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join('; ') || undefined;
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      return pick(o.message) ?? pick(o.reason) ?? JSON.stringify(o);
    }
    return undefined;
  };
  const found = body ? (pick(body.errors) ?? pick(body.error) ?? pick(body.message) ?? pick(body.reason)) : undefined;
  return scrub(found ?? (answer.text.trim() || `HTTP ${answer.status} with an empty body`), secrets);
}

export const isSuccess = (status: number) => status >= 200 && status < 300;

export function joinUrl(base: string, path: string): string {
  return base.replace(/\/+$/, '') + path;
}
