// The delivery state machine every push goes through, /sendpush, campaigns and the delivery worker
// alike. Its caller writes the delivery row `pending` (in its own transaction) before anything is
// sent; each attempt then calls the provider under the delivery's idempotency key (the delivery id,
// or the batch id for a campaign batch) and records the outcome: `sent` or `delivered`; `failed`
// (a permanent refusal, or the attempts spent: engagement/push/retry.ts); or still `pending` with its next
// attempt due later, which the job runner makes (engagement/push/sweeper.ts). Nothing here waits: a
// retry is never a sleep inside a request.

import type { ServiceContext } from '../../context.js';
import type { AppRow } from '../../storage/tenancy.js';
import { type BatchResult, ProviderError, type ProviderKind, type PushUser } from './provider.js';
import type { PreparedProvider } from './providers.js';
import { type DeliveryResolution, resolveDeliveries, scheduleRetry } from './queries/push.js';
import { retryDelay } from './retry.js';

/** One provider call: for one delivery, or for a campaign batch (many deliveries, one call). */
export type Attempt = {
  app: AppRow;
  prepared: PreparedProvider;
  title: string;
  message: string;
  /** Our tracked click link, or undefined. */
  actionUrl?: string;
  /** Which call this is for these deliveries (1 for the first), as their `attempts` column counts. */
  attempt: number;
  /** Fields for the log lines (campaign id...). */
  log: Record<string, unknown>;
} & (
  | { deliveryId: string; user: PushUser }
  | { batchId: string; recipients: { deliveryId: string; user: PushUser }[] }
);

export type AttemptOutcome =
  | { state: 'sent' }
  | { state: 'retrying'; at: Date; error: ProviderError }
  | { state: 'failed'; error: ProviderError };

/** The adapter's failure as a ProviderError (anything else an adapter threw becomes one). */
export function asProviderError(kind: ProviderKind, err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  return new ProviderError(kind, null, `The ${kind} adapter failed: ${(err as Error)?.message ?? err}`);
}

/** Makes one attempt of pending deliveries and records its outcome on them. */
export async function attemptDelivery(ctx: ServiceContext, a: Attempt): Promise<AttemptOutcome> {
  const { provider } = a.prepared;
  const ids = 'batchId' in a ? a.recipients.map((r) => r.deliveryId) : [a.deliveryId];
  const log = {
    ...a.log,
    app_id: a.app.id,
    provider: provider.kind,
    attempt: a.attempt,
    ...('batchId' in a ? { batch_id: a.batchId } : { delivery_id: a.deliveryId }),
  };
  let delivered = false;
  try {
    if ('batchId' in a) {
      const result = await provider.sendMany!({
        app: a.app,
        users: a.recipients.map((r) => r.user),
        batchId: a.batchId,
        title: a.title,
        message: a.message,
        actionUrl: a.actionUrl,
      });
      delivered = result.delivered;
      await resolveBatch(ctx, a.app.id, result, a.recipients);
    } else {
      const result = await provider.send({
        app: a.app,
        user: a.user,
        deliveryId: a.deliveryId,
        idempotencyKey: a.deliveryId,
        title: a.title,
        message: a.message,
        actionUrl: a.actionUrl,
      });
      delivered = result.delivered;
      await resolveDeliveries(ctx.db, a.app.id, ids, {
        status: result.delivered ? 'delivered' : 'sent',
        provider_message_id: result.providerMessageId,
        error: null,
        recipients: result.recipients,
        resolved_at: ctx.clock(),
        failure_kind: null,
      });
    }
    ctx.metrics.pushSends.inc({ provider: provider.kind, outcome: delivered ? 'delivered' : 'sent' });
    return { state: 'sent' };
  } catch (err) {
    const error = asProviderError(provider.kind, err);
    const wait = retryDelay(provider, error, a.attempt);
    ctx.metrics.pushSends.inc({ provider: provider.kind, outcome: wait !== null ? 'retry' : 'failed' });
    if (wait !== null) {
      const at = new Date(ctx.clock().getTime() + wait);
      await scheduleRetry(ctx.db, a.app.id, ids, at, failureText(error));
      ctx.wakeDeliveries?.(at);
      ctx.logger.info({ ...log, status: error.status, wait_ms: wait }, 'push retry scheduled');
      return { state: 'retrying', at, error };
    }
    // The provider's reply is not logged: it may echo the message, the user or anything else.
    ctx.logger.warn({ ...log, status: error.status, reason: error.reason }, 'push refused');
    await resolveDeliveries(ctx.db, a.app.id, ids, failedColumns(error, ctx.clock()));
    return { state: 'failed', error };
  }
}

/** Records a batch's answer: the users it could not target failed (no device), the rest sent. */
async function resolveBatch(
  ctx: ServiceContext,
  appId: string,
  result: BatchResult,
  recipients: { deliveryId: string; user: PushUser }[],
) {
  const failed = new Set(result.failedExternalIds);
  const resolvedAt = ctx.clock();
  const idsWhere = (noDevice: boolean) =>
    recipients.filter((r) => failed.has(r.user.external_id) === noDevice).map((r) => r.deliveryId);
  await resolveDeliveries(ctx.db, appId, idsWhere(true), {
    status: 'failed',
    provider_message_id: result.providerMessageId,
    error: 'the provider could not target this user (no device)',
    recipients: 0,
    resolved_at: resolvedAt,
    failure_kind: 'no_device',
  });
  await resolveDeliveries(ctx.db, appId, idsWhere(false), {
    status: result.delivered ? 'delivered' : 'sent',
    provider_message_id: result.providerMessageId,
    error: null,
    recipients: 1,
    resolved_at: resolvedAt,
    failure_kind: null,
  });
}

const failureText = (error: ProviderError) => `${error.status ?? 'no answer'}: ${error.reason}`;

/** The columns a failed delivery records. */
export function failedColumns(error: ProviderError, at: Date): DeliveryResolution {
  return {
    status: 'failed',
    provider_message_id: null,
    error: failureText(error),
    recipients: 0,
    resolved_at: at,
    failure_kind: error.kind,
  };
}
