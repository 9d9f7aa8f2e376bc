// The delivery worker (job `push-sweep`): every push attempt after a delivery's first is made here,
// on the job runner, through the same state machine as the first (engagement/push/attempts.ts). It
// takes `pending` deliveries one provider call at a time (one delivery, or one campaign batch):
// - waiting for a retry that is now due (the provider answered 429, 5xx or nothing, engagement/push/retry.ts):
//   attempted again under the same idempotency key;
// - left by an instance that stopped during an attempt: still `pending`, with no retry due,
//   PUSH_PENDING_STALE_SECONDS (120 by default) after the attempt started by the database's clock.
//   The provider may or may not have sent it, so through a provider with idempotency keys
//   (OneSignal, webhook) it is attempted again under the same key (the delivery id, or the batch
//   id): the provider sends it only if the first call never reached it, and answers as before
//   otherwise; through one without (WonderPush, Web Push) it becomes `unknown`, never sent again.
// A delivery whose app lost or changed its provider before the attempt is not sent: failed when it
// was waiting for a retry (the provider had not taken it), unknown when it was interrupted.
// Campaign sends left `sending` with no delivery (taken from the queue, no row written yet) go
// back to the queue and are sent; nothing reached a provider for them.

import { type AppRow, findApp } from '../../storage/tenancy.js';
import { type CampaignEngine, sendQueued } from '../campaign-runs.js';
import { findBatch, requeueAbandonedSends } from '../queries/campaign-sends.js';
import { attemptDelivery } from './attempts.js';
import type { PreparedProvider } from './providers.js';
import { claimDueDeliveries, type DueDelivery, externalIds, resolveDeliveries } from './queries/push.js';
import { clickLink, prepareProvider } from './send.js';

export interface SweepOutcome {
  requeued: number;
  /** Deliveries attempted again: retries due, and interrupted attempts resent under their key. */
  attempted: number;
  unknown: number;
  /** Not attempted: the app has no usable provider any more. */
  dropped: number;
}

type Prepared = { app: AppRow; prepared: PreparedProvider } | null;

/** One pass of the delivery worker over every app. */
export async function sweepPending(engine: CampaignEngine, staleMs: number): Promise<SweepOutcome> {
  const { ctx } = engine;
  const out: SweepOutcome = {
    requeued: await requeueAbandonedSends(ctx.db, staleMs, ctx.clock()),
    attempted: 0,
    unknown: 0,
    dropped: 0,
  };
  const providers = new Map<string, Prepared>();
  for (;;) {
    // One call's deliveries at a time, taken just before the call: a delivery is never left taken
    // while others are sent, where another worker would count it as interrupted.
    const rows = await claimDueDeliveries(ctx.db, ctx.clock(), staleMs);
    if (rows.length === 0) break;
    const appId = rows[0]!.app_id;
    if (!providers.has(appId)) providers.set(appId, await providerOf(engine, appId));
    await advance(engine, providers.get(appId)!, rows, out);
  }
  if (out.requeued + out.unknown + out.dropped > 0) ctx.logger.warn(out, 'push sweeper resolved interrupted sends');
  else if (out.attempted > 0) ctx.logger.info(out, 'push retries made');
  if (out.requeued > 0) await sendQueued(engine);
  return out;
}

async function providerOf(engine: CampaignEngine, appId: string): Promise<Prepared> {
  const app = await findApp(engine.ctx.db, appId);
  if (!app) return null;
  try {
    return { app, prepared: await prepareProvider(engine.ctx, app) };
  } catch {
    return null; // no provider any more, or its secrets do not open: nothing can be sent
  }
}

/** Resolves what cannot be attempted, then makes the attempt of the rest (one call). */
async function advance(engine: CampaignEngine, p: Prepared, rows: DueDelivery[], out: SweepOutcome) {
  const again = await resolveUnattemptable(engine, p, rows, out);
  if (!p || again.length === 0) return;
  const { ctx } = engine;
  const appId = rows[0]!.app_id;
  const users = await externalIds(
    ctx.db,
    appId,
    again.map((r) => r.user_id),
  );
  // a user erased meanwhile took their deliveries along
  const targets = again.filter((r) => users.has(r.user_id));
  const user = (r: DueDelivery) => ({ id: r.user_id, external_id: users.get(r.user_id)! });
  const first = targets[0];
  if (!first) return;
  out.attempted += targets.length;
  const common = {
    app: p.app,
    prepared: p.prepared,
    title: first.title,
    message: first.message,
    log: { campaign_id: first.campaign_id, resend: first.interrupted },
  };
  if (first.batch_id && p.prepared.provider.sendMany) {
    const batch = await findBatch(ctx.db, first.batch_id);
    await attemptDelivery(ctx, {
      ...common,
      batchId: first.batch_id,
      recipients: targets.map((r) => ({ deliveryId: r.id, user: user(r) })),
      actionUrl: batch?.action_url ? clickLink(engine.linkBase(), first.batch_id) : undefined,
      attempt: Math.max(...targets.map((r) => r.attempts ?? 1)),
    });
    return;
  }
  for (const r of targets) {
    await attemptDelivery(ctx, {
      ...common,
      title: r.title,
      message: r.message,
      deliveryId: r.id,
      user: user(r),
      actionUrl: r.action_url ? clickLink(engine.linkBase(), r.id) : undefined,
      attempt: r.attempts ?? 1,
    });
  }
}

/**
 * Resolves the deliveries that cannot be attempted: an interrupted send without an idempotency key
 * becomes unknown, a retry whose provider was removed or changed fails. Returns the others.
 */
async function resolveUnattemptable(
  engine: CampaignEngine,
  p: Prepared,
  rows: DueDelivery[],
  out: SweepOutcome,
): Promise<DueDelivery[]> {
  const { ctx } = engine;
  const appId = rows[0]!.app_id;
  const usable = (r: DueDelivery) => p !== null && p.prepared.row.provider === r.provider;
  const lost = rows.filter((r) => r.interrupted && !(usable(r) && p!.prepared.provider.idempotent));
  const dropped = rows.filter((r) => !r.interrupted && !usable(r));
  for (const r of lost) {
    ctx.logger.warn(
      { app_id: appId, delivery_id: r.id, campaign_id: r.campaign_id, provider: r.provider },
      'push left pending by an interrupted send is now unknown',
    );
  }
  const at = ctx.clock();
  await resolveDeliveries(
    ctx.db,
    appId,
    lost.map((r) => r.id),
    {
      status: 'unknown',
      provider_message_id: null,
      error: `The send was interrupted before the ${rows[0]!.provider} provider answered, and it has no idempotency key: it may or may not have been sent, and is not sent again.`,
      recipients: 0,
      resolved_at: at,
    },
  );
  await resolveDeliveries(
    ctx.db,
    appId,
    dropped.map((r) => r.id),
    {
      status: 'failed',
      provider_message_id: null,
      error: "The app's push provider was removed or changed before this delivery's retry: it was not sent again.",
      recipients: 0,
      resolved_at: at,
      failure_kind: null,
    },
  );
  out.unknown += lost.length;
  out.dropped += dropped.length;
  return rows.filter((r) => !lost.includes(r) && !dropped.includes(r));
}
