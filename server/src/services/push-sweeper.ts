// The sweeper: resolves what a crash left behind. A delivery still `pending` some time after its
// last attempt started (PUSH_PENDING_STALE_SECONDS, 120 by default, by the database's clock) was
// being sent by an instance
// that stopped before recording the answer, so the provider may or may not have sent it:
// - through a provider with idempotency keys (OneSignal, webhook) it is sent again under the same
//   key (the delivery id, or the batch id for a campaign batch): the provider sends it only if
//   the first call never reached it, and answers as before otherwise;
// - through one without (WonderPush, Web Push) it becomes `unknown` and is never sent again.
// Campaign sends left `sending` with no delivery (taken from the queue, no row written yet) go
// back to the queue and are sent; nothing reached a provider for them.
import type { BatchResult, PushResult } from '../push/provider.js';
import { findBatch, requeueAbandonedSends, resolveDeliveries } from '../storage/campaign-sends.js';
import { claimStaleDeliveries, type DeliveryRow, externalIds } from '../storage/push.js';
import { findApp } from '../storage/tenancy.js';
import { resolveBatch } from './campaign-delivery.js';
import { type CampaignEngine, sendQueued } from './campaign-runs.js';
import { clickLink, type PreparedProvider, prepareProvider } from './push.js';
import { attempt, failedColumns } from './push-attempts.js';

export interface SweepOutcome {
  requeued: number;
  resent: number;
  unknown: number;
}

/** One pass of the sweeper over every app. */
export async function sweepPending(engine: CampaignEngine, staleMs: number): Promise<SweepOutcome> {
  const { ctx } = engine;
  const out: SweepOutcome = {
    requeued: await requeueAbandonedSends(ctx.db, staleMs, ctx.clock()),
    resent: 0,
    unknown: 0,
  };
  for (;;) {
    const rows = await claimStaleDeliveries(ctx.db, staleMs, 500);
    if (rows.length === 0) break;
    const byApp = new Map<string, DeliveryRow[]>();
    for (const r of rows) byApp.set(r.app_id, [...(byApp.get(r.app_id) ?? []), r]);
    for (const [appId, appRows] of byApp) {
      const done = await sweepApp(engine, appId, appRows);
      out.resent += done.resent;
      out.unknown += done.unknown;
    }
  }
  if (out.requeued + out.resent + out.unknown > 0) ctx.logger.warn(out, 'push sweeper resolved interrupted sends');
  if (out.requeued > 0) await sendQueued(engine);
  return out;
}

async function sweepApp(engine: CampaignEngine, appId: string, rows: DeliveryRow[]) {
  const { ctx } = engine;
  const app = await findApp(ctx.db, appId);
  let prepared: PreparedProvider | null = null;
  if (app) {
    try {
      prepared = await prepareProvider(ctx, app);
    } catch {
      prepared = null; // no provider any more, or its secrets do not open: nothing can be resent
    }
  }
  const resendable = (r: DeliveryRow) => prepared?.provider.idempotent && prepared.row.provider === r.provider;
  const lost = rows.filter((r) => !resendable(r));
  for (const r of lost) {
    ctx.logger.warn(
      { app_id: appId, delivery_id: r.id, campaign_id: r.campaign_id, provider: r.provider },
      'push left pending by an interrupted send is now unknown',
    );
  }
  await resolveDeliveries(
    ctx.db,
    appId,
    lost.map((r) => r.id),
    {
      status: 'unknown',
      provider_message_id: null,
      error: `The send was interrupted before ${r0(lost)} answered, and it has no idempotency key: it may or may not have been sent, and is not sent again.`,
      recipients: 0,
      resolved_at: ctx.clock(),
    },
  );
  const again = rows.filter(resendable);
  if (!app || !prepared || again.length === 0) return { resent: 0, unknown: lost.length };
  const users = await externalIds(
    ctx.db,
    appId,
    again.map((r) => r.user_id),
  );
  const batches = new Map<string, DeliveryRow[]>();
  for (const r of again) {
    if (r.batch_id) batches.set(r.batch_id, [...(batches.get(r.batch_id) ?? []), r]);
    else await resendOne(engine, app, prepared, r, users.get(r.user_id));
  }
  for (const [batchId, batchRows] of batches) {
    const { provider } = prepared;
    const batch = await findBatch(ctx.db, batchId);
    const targets = batchRows.filter((r) => users.has(r.user_id));
    const idOf = new Map(targets.map((r) => [users.get(r.user_id)!, r.id]));
    const first = batchRows[0]!;
    const outcome = await attempt<BatchResult>(
      ctx,
      provider,
      () =>
        provider.sendMany!({
          app,
          users: targets.map((r) => ({ id: r.user_id, external_id: users.get(r.user_id)! })),
          batchId,
          title: first.title,
          message: first.message,
          actionUrl: batch?.action_url ? clickLink(engine.linkBase(), batchId) : undefined,
        }),
      { app_id: appId, batch_id: batchId, resend: true },
    );
    if (outcome.ok) {
      await resolveBatch(ctx, appId, outcome.result, first.attempts ?? 2, [...idOf.keys()], idOf);
    } else {
      await resolveDeliveries(
        ctx.db,
        appId,
        batchRows.map((r) => r.id),
        failedColumns(outcome, ctx.clock()),
      );
    }
  }
  return { resent: again.length, unknown: lost.length };
}

const r0 = (rows: DeliveryRow[]) => (rows[0] ? `the ${rows[0].provider} provider` : 'the provider');

async function resendOne(
  engine: CampaignEngine,
  app: NonNullable<Awaited<ReturnType<typeof findApp>>>,
  prepared: PreparedProvider,
  r: DeliveryRow,
  externalId: string | undefined,
) {
  const { ctx } = engine;
  if (!externalId) return; // the user was erased with their deliveries
  const { provider } = prepared;
  const outcome = await attempt<PushResult>(
    ctx,
    provider,
    () =>
      provider.send({
        app,
        user: { id: r.user_id, external_id: externalId },
        deliveryId: r.id,
        idempotencyKey: r.id,
        title: r.title,
        message: r.message,
        actionUrl: r.action_url ? clickLink(engine.linkBase(), r.id) : undefined,
      }),
    { app_id: app.id, delivery_id: r.id, resend: true },
  );
  const at = ctx.clock();
  await resolveDeliveries(
    ctx.db,
    app.id,
    [r.id],
    outcome.ok
      ? {
          status: outcome.result.delivered ? 'delivered' : 'sent',
          provider_message_id: outcome.result.providerMessageId,
          error: null,
          recipients: outcome.result.recipients,
          resolved_at: at,
          attempts: (r.attempts ?? 2) + outcome.attempts - 1,
          failure_kind: null,
        }
      : { ...failedColumns(outcome, at), attempts: (r.attempts ?? 2) + outcome.attempts - 1 },
  );
}
