// When a failed provider call is tried again, and after how long. A provider answering 429 or 503
// did not take the message, so any provider is asked again; another 5xx, a timeout or a lost
// connection may have sent it, so only a provider with idempotency keys (the retry carries the same
// key) is asked again. The wait doubles from half a second, or is what the provider's Retry-After
// asks for; a Retry-After beyond MAX_WAIT_MS ends the attempts (the delivery fails with the
// provider's reason). Any other answer (400, 401, 403, 404...) is a permanent refusal: recorded
// with its reason, never retried. The retries themselves run on the job runner
// (engagement/push/sweeper.ts), never as a wait inside a request.
import { ProviderError, type PushProvider } from './provider.js';

/** Calls to the provider for one delivery, the first one included. */
export const MAX_ATTEMPTS = 4;
export const MAX_WAIT_MS = 60_000;
const BASE_WAIT_MS = 500;

/** Whether this failure may be tried again through this provider. */
function retryable(provider: PushProvider, err: unknown): boolean {
  if (!(err instanceof ProviderError) || err.kind !== null) return false;
  if (err.status === 429 || err.status === 503) return true;
  if (err.status === null || err.status >= 500) return provider.idempotent;
  return false;
}

/**
 * After attempt number `attempt` failed with `err`: how long to wait before the next one, or null
 * when there is none (a permanent refusal, the attempts spent, or a Retry-After too long to honour).
 */
export function retryDelay(provider: PushProvider, err: unknown, attempt: number): number | null {
  if (attempt >= MAX_ATTEMPTS || !retryable(provider, err)) return null;
  const wait = (err as ProviderError).retryAfterMs ?? BASE_WAIT_MS * 2 ** (attempt - 1);
  return wait > MAX_WAIT_MS ? null : wait;
}
