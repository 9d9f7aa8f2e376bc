// Queries for campaign sends: the users an occurrence targets (push_opt_out users never), the
// claim of each (campaign, user, occurrence) before anything is sent, the frequency cap and
// trigger cooldown look-ups, batches and `pending` deliveries written before a provider is called,
// and the counters behind campaign status views.
import type { Knex } from 'knex';
import type { ProviderKind } from '../push/provider.js';

export interface TargetUser {
  id: string;
  external_id: string;
  properties: Record<string, unknown>;
  last_active: Date | null;
}

const TARGET_COLUMNS = ['id', 'external_id', 'properties', 'last_active'];
const notOptedOut = `not coalesce(properties -> 'push_opt_out' = 'true'::jsonb, false)`;

/** Users of the app who may receive campaign pushes; all of them, or those with these external ids. */
export function targetUsers(db: Knex, appId: string, externalIds?: string[]): Promise<TargetUser[]> {
  const q = db('users').where({ app_id: appId }).whereRaw(notOptedOut).select(TARGET_COLUMNS).orderBy('id');
  if (externalIds) q.whereIn('external_id', externalIds);
  return q;
}

/** How many users of the app may receive campaign pushes (a campaign without an audience reaches them). */
export async function countTargetUsers(db: Knex, appId: string): Promise<number> {
  const [row] = await db('users').where({ app_id: appId }).whereRaw(notOptedOut).count<{ n: string }[]>({ n: '*' });
  return Number(row?.n ?? 0);
}

/** Users of the app by internal id who may receive campaign pushes. */
export const targetUsersById = (db: Knex, appId: string, ids: string[]): Promise<TargetUser[]> =>
  db('users').where({ app_id: appId }).whereIn('id', ids).whereRaw(notOptedOut).select(TARGET_COLUMNS);

/** Users whose last activity is at or before `cutoff` (slipping away). */
export const inactiveUsers = (db: Knex, appId: string, cutoff: Date): Promise<TargetUser[]> =>
  db('users')
    .where({ app_id: appId })
    .whereNotNull('last_active')
    .where('last_active', '<=', cutoff)
    .whereRaw(notOptedOut)
    .select(TARGET_COLUMNS)
    .orderBy('id');

/** `failed`: an occurrence that could not be prepared after its attempts (no push was made). */
export type SendStatus = 'queued' | 'sending' | 'done' | 'skipped' | 'cancelled' | 'failed';

export interface SendRow {
  id: string;
  app_id: string;
  campaign_id: string;
  user_id: string;
  occurrence: string;
  status: SendStatus;
  reason: string | null;
  message: string | null;
  not_before: Date;
  delivery_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** Claims sends: rows already claimed for the same (campaign, user, occurrence) are left alone. */
export async function claimSends(db: Knex, rows: SendRow[]): Promise<SendRow[]> {
  const out: SendRow[] = [];
  for (let i = 0; i < rows.length; i += 1000) {
    const saved = await db('campaign_sends')
      .insert(rows.slice(i, i + 1000))
      .onConflict(['app_id', 'campaign_id', 'user_id', 'occurrence'])
      .ignore()
      .returning('*');
    out.push(...(saved as SendRow[]));
  }
  return out;
}

/**
 * Records an occurrence that failed for good as a `failed` send with the reason (unless the user
 * or campaign is gone, or the occurrence was claimed after all).
 */
export async function recordFailedOccurrence(
  db: Knex,
  row: Pick<SendRow, 'id' | 'app_id' | 'campaign_id' | 'user_id' | 'occurrence' | 'reason' | 'created_at'>,
): Promise<void> {
  await db.raw(
    `insert into campaign_sends (id, app_id, campaign_id, user_id, occurrence, status, reason, message, not_before,
                                 created_at, updated_at)
     select ?, ?, ?, ?, ?, 'failed', ?, null, ?, ?, ?
     where exists (select 1 from users where app_id = ? and id = ?)
       and exists (select 1 from campaigns where app_id = ? and id = ?)
     on conflict do nothing`,
    [
      row.id,
      row.app_id,
      row.campaign_id,
      row.user_id,
      row.occurrence,
      row.reason,
      row.created_at,
      row.created_at,
      row.created_at,
      row.app_id,
      row.user_id,
      row.app_id,
      row.campaign_id,
    ],
  );
}

/** Occurrences of a campaign that failed for good (recordFailedOccurrence). */
export async function failedOccurrenceCount(db: Knex, appId: string, campaignId: string): Promise<number> {
  const [row] = await db('campaign_sends')
    .where({ app_id: appId, campaign_id: campaignId, status: 'failed' })
    .count<{ n: string }[]>({ n: '*' });
  return Number(row?.n ?? 0);
}

/** Whether the campaign already sent (or queued) to the user since `since` (trigger cooldown). */
export async function sentSince(db: Knex, appId: string, campaignId: string, userId: string, since: Date) {
  const row = await db('campaign_sends')
    .where({ app_id: appId, campaign_id: campaignId, user_id: userId })
    .whereIn('status', ['queued', 'sending', 'done'])
    .where('created_at', '>', since)
    .first('id');
  return row !== undefined;
}

/** Not per-app: the send worker takes due queued sends of every app and marks them `sending`. */
export async function takeDueSends(db: Knex, now: Date, limit: number): Promise<SendRow[]> {
  const { rows } = await db.raw(
    `update campaign_sends set status = 'sending', updated_at = ?, taken_at = now()
     where id in (select s.id from campaign_sends s
                  where s.status = 'queued' and s.not_before <= ?
                    and not exists (select 1 from campaigns c where c.app_id = s.app_id and c.id = s.campaign_id
                                    and c.status = 'paused')
                  order by s.not_before, s.id limit ? for update of s skip locked)
     returning *`,
    [now, now, limit],
  );
  return rows as SendRow[];
}

/** Campaign pushes per user since `since` (the frequency cap), failures not counted. */
export async function campaignPushesSince(
  db: Knex,
  appId: string,
  userIds: string[],
  since: Date,
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (let i = 0; i < userIds.length; i += 1000) {
    const rows = await db('push_deliveries')
      .where({ app_id: appId })
      .whereIn('user_id', userIds.slice(i, i + 1000))
      .whereNotNull('campaign_id')
      .whereNot('status', 'failed')
      .where('created_at', '>', since)
      .groupBy('user_id')
      .select('user_id')
      .count<{ user_id: string; n: string }[]>({ n: '*' });
    for (const r of rows) out.set(r.user_id, Number(r.n));
  }
  return out;
}

export const finishSends = (db: Knex, appId: string, ids: string[], patch: Partial<SendRow>) =>
  ids.length === 0
    ? Promise.resolve(0)
    : db('campaign_sends').where({ app_id: appId }).whereIn('id', ids).update(patch);

export const linkSendDelivery = (db: Knex, appId: string, id: string, deliveryId: string, at: Date) =>
  db('campaign_sends').where({ app_id: appId, id }).update({ delivery_id: deliveryId, updated_at: at });

/**
 * Marks sends `done` with their delivery id, each only if no delivery was linked to it yet (a send
 * the sweeper put back in the queue may be taken twice): returns the ids of the sends linked now.
 * Run in the transaction that writes the deliveries, so a send and its delivery row exist together.
 */
export async function linkSends(
  db: Knex,
  appId: string,
  pairs: { sendId: string; deliveryId: string }[],
  at: Date,
): Promise<Set<string>> {
  const linked = new Set<string>();
  for (let i = 0; i < pairs.length; i += 1000) {
    const part = pairs.slice(i, i + 1000);
    const { rows } = await db.raw(
      `update campaign_sends s set status = 'done', delivery_id = v.d, updated_at = ?
       from unnest(?::uuid[], ?::uuid[]) as v(id, d)
       where s.app_id = ? and s.id = v.id and s.delivery_id is null and s.status = 'sending'
       returning s.id`,
      [at, part.map((p) => p.sendId), part.map((p) => p.deliveryId), appId],
    );
    for (const r of rows as { id: string }[]) linked.add(r.id);
  }
  return linked;
}

/**
 * Not per-app (the sweeper): sends taken from the queue more than `staleMs` ago (database clock)
 * and still `sending` with no delivery go back to the queue.
 */
export async function requeueAbandonedSends(db: Knex, staleMs: number, now: Date): Promise<number> {
  const result = await db.raw(
    `update campaign_sends set status = 'queued', updated_at = ?
     where status = 'sending' and delivery_id is null
       and coalesce(taken_at, updated_at) < now() - ? * interval '1 millisecond'`,
    [now, staleMs],
  );
  return result.rowCount ?? 0;
}

/**
 * The privacy erasure calls this in its transaction: the user's campaign sends that are queued
 * (waiting for quiet hours to end, or not yet picked up) are cancelled, and the user's trigger
 * occurrences not yet read from the outbox are dropped; returns how many sends were cancelled.
 */
export async function cancelQueuedCampaignSends(db: Knex, appId: string, userId: string): Promise<number> {
  const result = await db.raw(
    `with dropped as (delete from campaign_trigger_outbox where app_id = ? and user_id = ?)
     update campaign_sends set status = 'cancelled', reason = 'erased', updated_at = now()
     where app_id = ? and user_id = ? and status = 'queued'`,
    [appId, userId, appId, userId],
  );
  return result.rowCount ?? 0;
}

export interface BatchRow {
  id: string;
  app_id: string;
  campaign_id: string | null;
  action_url: string | null;
  size: number;
  clicks: number;
  created_at: Date;
}

export async function insertBatch(db: Knex, row: Omit<BatchRow, 'clicks'>): Promise<void> {
  await db('push_batches').insert(row);
}

/** Not per-app: a click link carries only the batch id; the row says which app it belongs to. */
export const findBatch = (db: Knex, id: string) => db<BatchRow>('push_batches').where({ id }).first();

export const addBatchClick = (db: Knex, appId: string, id: string) =>
  db('push_batches')
    .where({ app_id: appId, id })
    .update({ clicks: db.raw('clicks + 1') });

export interface PendingDelivery {
  id: string;
  app_id: string;
  user_id: string;
  campaign_id: string;
  batch_id: string | null;
  provider: ProviderKind;
  title: string;
  message: string;
  generated: boolean;
  action_url: string | null;
  created_at: Date;
}

/** Deliveries written `pending` before the provider is called. */
export async function insertPendingDeliveries(db: Knex, rows: PendingDelivery[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 1000) {
    await db('push_deliveries').insert(
      rows.slice(i, i + 1000).map((r) => ({ ...r, status: 'pending', recipients: 0, provider_message_id: null })),
    );
  }
}

export interface DeliveryFigures {
  total: number;
  pending: number;
  sent: number;
  delivered: number;
  failed: number;
  unknown: number;
  no_device: number;
  subscription_gone: number;
  clicked: number;
  first_at: Date | null;
  last_resolved_at: Date | null;
  avg_delivery_seconds: number | null;
}

/** Status counts of a campaign's deliveries, or of one delivery (`deliveryId`). */
export async function deliveryFigures(
  db: Knex,
  appId: string,
  by: { campaignId: string } | { deliveryId: string },
): Promise<DeliveryFigures> {
  const where = 'campaignId' in by ? 'd.campaign_id = ?' : 'd.id = ?';
  const key = 'campaignId' in by ? by.campaignId : by.deliveryId;
  const { rows } = await db.raw(
    `select count(*) as total,
       count(*) filter (where d.status = 'pending') as pending,
       count(*) filter (where d.status in ('sent', 'delivered')) as sent,
       count(*) filter (where d.status = 'delivered') as delivered,
       count(*) filter (where d.status = 'failed') as failed,
       count(*) filter (where d.status = 'unknown') as unknown,
       count(*) filter (where d.status = 'failed' and d.failure_kind = 'no_device') as no_device,
       count(*) filter (where d.status = 'failed' and d.failure_kind = 'subscription_gone') as subscription_gone,
       count(*) filter (where d.clicked_at is not null)
         + coalesce((select sum(least(b.clicks, b.size)) from push_batches b
                     where b.app_id = ? and b.id in (select distinct d2.batch_id from push_deliveries d2
                       where d2.app_id = ? and ${where.replace('d.', 'd2.')})), 0) as clicked,
       min(d.created_at) as first_at, max(d.resolved_at) as last_resolved_at,
       avg(extract(epoch from (d.resolved_at - d.created_at))) filter (where d.status in ('sent', 'delivered')) as avg_s
     from push_deliveries d where d.app_id = ? and ${where}`,
    [appId, appId, key, appId, key],
  );
  const r = rows[0] as Record<string, string | Date | null>;
  return {
    total: Number(r.total),
    pending: Number(r.pending),
    sent: Number(r.sent),
    delivered: Number(r.delivered),
    failed: Number(r.failed),
    unknown: Number(r.unknown),
    no_device: Number(r.no_device),
    subscription_gone: Number(r.subscription_gone),
    clicked: Number(r.clicked),
    first_at: (r.first_at as Date | null) ?? null,
    last_resolved_at: (r.last_resolved_at as Date | null) ?? null,
    avg_delivery_seconds: r.avg_s === null ? null : Number(r.avg_s),
  };
}

/** The hour (in `timeZone`) in which most of the campaign's deliveries were sent, or null. */
export async function peakDeliveryHour(db: Knex, appId: string, campaignId: string, timeZone: string) {
  const { rows } = await db.raw(
    `select extract(hour from d.created_at at time zone ?) as h, count(*) as n
     from push_deliveries d where d.app_id = ? and d.campaign_id = ? and d.status in ('sent', 'delivered')
     group by 1 order by n desc, h limit 1`,
    [timeZone, appId, campaignId],
  );
  return rows.length > 0 ? Number((rows[0] as { h: string }).h) : null;
}

/** Queued sends of a campaign (waiting for quiet hours, or not yet picked up). */
export async function queuedSendCount(db: Knex, appId: string, campaignId: string): Promise<number> {
  const [row] = await db('campaign_sends')
    .where({ app_id: appId, campaign_id: campaignId })
    .whereIn('status', ['queued', 'sending'])
    .count<{ n: string }[]>({ n: '*' });
  return Number(row?.n ?? 0);
}
