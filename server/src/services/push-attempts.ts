// One provider call as Tally makes it everywhere (/sendpush, campaigns, the sweeper): retried
// with backoff when the provider may take it later (push/retry.ts), and its outcome turned into
// what the delivery row records: sent or delivered, or failed with our reason, the number of
// attempts and, for a user without a device or whose subscriptions are gone, that kind.
import { ProviderError, type ProviderKind, type PushProvider } from '../push/provider.js';
import { attemptsOf, withRetries } from '../push/retry.js';
import type { ServiceContext } from './context.js';

export interface Failed {
  error: ProviderError;
  attempts: number;
}

/** The adapter's failure as a ProviderError (anything else an adapter threw becomes one). */
export function asProviderError(kind: ProviderKind, err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  return new ProviderError(kind, null, `The ${kind} adapter failed: ${(err as Error)?.message ?? err}`);
}

/** Calls the provider with retries; resolves with the result, or with the final failure. */
export async function attempt<T>(
  ctx: ServiceContext,
  provider: PushProvider,
  send: () => Promise<T>,
  log: Record<string, unknown>,
): Promise<{ ok: true; result: T; attempts: number } | ({ ok: false } & Failed)> {
  try {
    const done = await withRetries(provider, send, (n, err, waitMs) =>
      ctx.logger.info(
        { ...log, provider: provider.kind, status: err.status, attempt: n, wait_ms: waitMs },
        'push retried',
      ),
    );
    return { ok: true, ...done };
  } catch (err) {
    const error = asProviderError(provider.kind, err);
    ctx.logger.warn(
      {
        ...log,
        provider: error.provider,
        status: error.status,
        reason: error.reason,
        attempts: attemptsOf(err),
        ...(error.detail ? { provider_reply: error.detail } : {}),
      },
      'push refused',
    );
    return { ok: false, error, attempts: attemptsOf(err) };
  }
}

/** The columns a failed delivery records. */
export function failedColumns(f: Failed, at: Date) {
  return {
    status: 'failed' as const,
    provider_message_id: null,
    error: `${f.error.status ?? 'no answer'}: ${f.error.reason}`,
    recipients: 0,
    resolved_at: at,
    attempts: f.attempts,
    failure_kind: f.error.kind,
  };
}
