// Retries of a provider call. A provider answering 429 or 503 did not take the message, so any
// provider is asked again; another 5xx, a timeout or a lost connection may have sent it, so only a
// provider with idempotency keys (the retry carries the same key) is asked again. The wait doubles
// from half a second, or is what the provider's Retry-After asks for; a Retry-After beyond
// MAX_WAIT_MS ends the attempts (the delivery fails with the provider's reason). Any other answer
// (400, 401, 403, 404...) is a permanent refusal: recorded with its reason, never retried.
import { ProviderError, type PushProvider } from './provider.js';

export const MAX_ATTEMPTS = 4;
export const MAX_WAIT_MS = 60_000;
/** No retry starts later than this after the first attempt (well within the sweeper's threshold). */
const BUDGET_MS = 60_000;
const BASE_WAIT_MS = 500;

export interface Attempted<T> {
  result: T;
  attempts: number;
}

/** Whether this failure may be tried again through this provider. */
export function retryable(provider: PushProvider, err: unknown): boolean {
  if (!(err instanceof ProviderError) || err.kind !== null) return false;
  if (err.status === 429 || err.status === 503) return true;
  if (err.status === null || err.status >= 500) return provider.idempotent;
  return false;
}

/** Calls `send` until it succeeds, fails permanently, or MAX_ATTEMPTS are spent. */
export async function withRetries<T>(
  provider: PushProvider,
  send: () => Promise<T>,
  onRetry?: (attempt: number, err: ProviderError, waitMs: number) => void,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<Attempted<T>> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return { result: await send(), attempts: attempt };
    } catch (err) {
      if (attempt >= MAX_ATTEMPTS || !retryable(provider, err))
        throw Object.assign(err as object, { attempts: attempt });
      const e = err as ProviderError;
      const wait = e.retryAfterMs ?? BASE_WAIT_MS * 2 ** (attempt - 1);
      if (wait > MAX_WAIT_MS || Date.now() - started + wait > BUDGET_MS) throw Object.assign(e, { attempts: attempt });
      onRetry?.(attempt, e, wait);
      await sleep(wait);
    }
  }
}

/** How many attempts a failure took (set by withRetries), 1 when unknown. */
export const attemptsOf = (err: unknown): number => (err as { attempts?: number })?.attempts ?? 1;
