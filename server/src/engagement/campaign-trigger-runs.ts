// Trigger occurrences, run by the job runner from the outbox the event writer fills in the
// ingestion transaction. A worker takes one occurrence at a time and leases it
// (PUSH_PENDING_STALE_SECONDS); the occurrence leaves the outbox only in the transaction that
// claims its sends, or when it turns out to send nothing (campaign paused, stale event, cooldown,
// user outside the audience). Its text is written before that transaction, never inside it. So:
// - a worker that stops between taking it and claiming its sends leaves it in the outbox, taken
//   again once the lease ends; a worker whose lease ran out cannot claim it any more (the outbox
//   row's attempt count is checked in the claim's transaction), so it is claimed once;
// - an occurrence whose processing fails (a language-model failure while writing its text, a
//   database error) is tried again 1, 2, 4 and 8 minutes later; after MAX_TRIGGER_ATTEMPTS it is
//   recorded as a failed occurrence (a `failed` send with the error: the campaign's
//   `failed_occurrences`) and logged at error level.
import { uuidv7 } from '../ids.js';
import { inTransaction } from '../storage/handle.js';
import { findApp } from '../storage/tenancy.js';
import { type CampaignEngine, inAudience, queueOccurrence, sendQueued } from './campaign-runs.js';
import { appTimeZone, DEFAULT_COOLDOWN_HOURS } from './campaigns.js';
import { recordFailedOccurrence, sentSince, targetUsersById } from './queries/campaign-sends.js';
import {
  deleteOutboxRow,
  findCampaign,
  moveCampaign,
  type OutboxRow,
  retryOutboxRow,
  takeOutboxRow,
} from './queries/campaigns.js';

/** Attempts of one trigger occurrence before it is recorded as failed. */
export const MAX_TRIGGER_ATTEMPTS = 5;
const RETRY_BASE_MS = 60_000;
const HOUR_MS = 3_600_000;

/** Turns due trigger occurrences into claimed sends, then sends what is queued. */
export async function runTriggers(engine: CampaignEngine): Promise<void> {
  const { ctx } = engine;
  for (;;) {
    const now = ctx.clock();
    const row = await takeOutboxRow(ctx.db, now, new Date(now.getTime() + ctx.config.pushPendingStaleMs));
    if (!row) break;
    if (row.attempts > MAX_TRIGGER_ATTEMPTS) {
      // its last attempt was interrupted (the worker stopped): no more attempts
      await giveUp(engine, row, row.last_error ?? 'every attempt was interrupted before it finished');
      continue;
    }
    try {
      await fire(engine, row);
    } catch (err) {
      await failed(engine, row, err);
    }
  }
  await sendQueued(engine);
}

async function fire(engine: CampaignEngine, row: OutboxRow): Promise<void> {
  const { ctx } = engine;
  const now = ctx.clock();
  const drop = () => deleteOutboxRow(ctx.db, row);
  let c = await findCampaign(ctx.db, row.app_id, row.campaign_id);
  if (!c || (c.status !== 'live' && c.status !== 'scheduled')) return void (await drop());
  if (row.received_at.getTime() - row.event_at.getTime() > HOUR_MS) return void (await drop());
  if (c.status === 'scheduled') {
    // not started when the event came
    if (!c.next_run_at || c.next_run_at > row.received_at) return void (await drop());
    c =
      (await moveCampaign(ctx.db, c.app_id, c.id, ['scheduled'], {
        status: 'live',
        next_run_at: null,
        updated_at: now,
      })) ?? c;
  }
  const cooldown = (c.trigger_cooldown_hours ?? DEFAULT_COOLDOWN_HOURS) * HOUR_MS;
  if (await sentSince(ctx.db, c.app_id, c.id, row.user_id, new Date(now.getTime() - cooldown)))
    return void (await drop());
  const app = await findApp(ctx.db, c.app_id);
  if (!app) return void (await drop());
  const users = await inAudience(ctx, app, c, await targetUsersById(ctx.db, app.id, [row.user_id]));
  await queueOccurrence(
    engine,
    app,
    c,
    await appTimeZone(ctx, app),
    users.map((user) => ({ user, occurrence: occurrenceOf(row) })),
    { claim: (db) => deleteOutboxRow(db, row), strictText: true },
  );
}

const occurrenceOf = (row: OutboxRow) => `event:${row.event_id}`;

const describe = (err: unknown) => {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 500 ? `${text.slice(0, 499)}…` : text;
};

/** Puts a failed occurrence back for a later attempt, or records it as failed after the last one. */
async function failed(engine: CampaignEngine, row: OutboxRow, err: unknown): Promise<void> {
  const { ctx } = engine;
  const reason = describe(err);
  if (row.attempts >= MAX_TRIGGER_ATTEMPTS) return giveUp(engine, row, reason);
  const at = new Date(ctx.clock().getTime() + RETRY_BASE_MS * 2 ** (row.attempts - 1));
  if (await retryOutboxRow(ctx.db, row, at, reason)) {
    ctx.logger.warn(
      {
        app_id: row.app_id,
        campaign_id: row.campaign_id,
        event_id: row.event_id,
        attempts: row.attempts,
        next_attempt_at: at.toISOString(),
        err: reason,
      },
      'trigger occurrence failed; it is tried again later',
    );
  }
}

async function giveUp(engine: CampaignEngine, row: OutboxRow, reason: string): Promise<void> {
  const { ctx } = engine;
  const now = ctx.clock();
  const recorded = await inTransaction(ctx.db, async (tx) => {
    if (!(await deleteOutboxRow(tx, row))) return false;
    await recordFailedOccurrence(tx, {
      id: uuidv7(now.getTime()),
      app_id: row.app_id,
      campaign_id: row.campaign_id,
      user_id: row.user_id,
      occurrence: occurrenceOf(row),
      reason,
      created_at: now,
    });
    return true;
  });
  if (!recorded) return;
  ctx.logger.error(
    {
      app_id: row.app_id,
      campaign_id: row.campaign_id,
      event_id: row.event_id,
      attempts: Math.min(row.attempts, MAX_TRIGGER_ATTEMPTS),
      err: reason,
    },
    'trigger occurrence failed for good: no push was sent for it',
  );
}
