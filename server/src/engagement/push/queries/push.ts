// Queries for push: provider configurations, deliveries, and the Web Push subscriptions the
// browser SDK registers (table `push_subscriptions`, owned by the website migration).
import type { Knex } from 'knex';
import type { ProviderKind } from '../provider.js';

export interface ProviderSettings {
  base_url?: string;
  onesignal_app_id?: string;
  webhook_url?: string;
  vapid_subject?: string;
  vapid_public_key?: string;
}

export interface PushProviderRow {
  app_id: string;
  provider: ProviderKind;
  settings: ProviderSettings;
  secrets: string | null;
  created_at: Date;
  updated_at: Date;
}

/** pending: written, provider not answered yet (or a retry due); unknown: left pending by a crash, never resent. */
export type DeliveryStatus = 'pending' | 'sent' | 'delivered' | 'failed' | 'unknown';

export interface DeliveryRow {
  id: string;
  app_id: string;
  user_id: string;
  campaign_id: string | null;
  provider: ProviderKind;
  provider_message_id: string | null;
  title: string;
  message: string;
  generated: boolean;
  action_url: string | null;
  status: DeliveryStatus;
  error: string | null;
  recipients: number;
  created_at: Date;
  clicked_at: Date | null;
  /** The campaign batch this delivery was sent in (one provider call, one tracked link). */
  batch_id?: string | null;
  /** When the provider answered. */
  resolved_at: Date | null;
  /** Calls made to the provider for this delivery (retries and resends included). */
  attempts?: number;
  /** When its last attempt started, by the database's clock (an attempt in flight is stale some time after). */
  attempted_at?: Date | null;
  /** While `pending`: when its retry is due (the job runner makes it); null while an attempt is in flight. */
  next_attempt_at?: Date | null;
  /** Why it failed, when counted apart: `no_device`, `subscription_gone`; null for other failures. */
  failure_kind?: string | null;
}

/** What is recorded when the provider answered (or the attempts ended). */
export type DeliveryResolution = Pick<
  DeliveryRow,
  'status' | 'provider_message_id' | 'error' | 'recipients' | 'resolved_at' | 'attempts' | 'failure_kind'
>;

export const findProvider = (db: Knex, appId: string) =>
  db<PushProviderRow>('push_providers').where({ app_id: appId }).first();

export async function saveProvider(
  db: Knex,
  row: Pick<PushProviderRow, 'app_id' | 'provider' | 'settings' | 'secrets'>,
  now: Date,
): Promise<PushProviderRow> {
  const [saved] = await db('push_providers')
    .insert({ ...row, settings: JSON.stringify(row.settings), created_at: now, updated_at: now })
    .onConflict('app_id')
    .merge(['provider', 'settings', 'secrets', 'updated_at'])
    .returning('*');
  return saved as PushProviderRow;
}

export async function insertDelivery(db: Knex, row: Omit<DeliveryRow, 'clicked_at'>): Promise<DeliveryRow> {
  const [saved] = await db('push_deliveries').insert(row).returning('*');
  return saved as DeliveryRow;
}

/**
 * Records the provider's answer (or the end of the attempts) on deliveries still `pending`; a row
 * resolved in the meantime keeps its status.
 */
export const resolveDeliveries = (db: Knex, appId: string, ids: string[], patch: DeliveryResolution) =>
  ids.length === 0
    ? Promise.resolve(0)
    : db('push_deliveries')
        .where({ app_id: appId, status: 'pending' })
        .whereIn('id', ids)
        .update({ ...patch, next_attempt_at: null });

/**
 * Leaves deliveries `pending` until their next attempt, due at `at` (the job runner makes it),
 * with the failure that delayed them in `error`.
 */
export const scheduleRetry = (db: Knex, appId: string, ids: string[], at: Date, error: string) =>
  ids.length === 0
    ? Promise.resolve(0)
    : db('push_deliveries')
        .where({ app_id: appId, status: 'pending' })
        .whereIn('id', ids)
        .update({ next_attempt_at: at, error });

/** Not per-app: a click link carries only the delivery id; the row says which app it belongs to. */
export const findDelivery = (db: Knex, id: string) => db<DeliveryRow>('push_deliveries').where({ id }).first();

/** Sets clicked_at on the first click only; later clicks keep the first time. */
export const markClicked = (db: Knex, appId: string, id: string, at: Date) =>
  db('push_deliveries').where({ app_id: appId, id }).whereNull('clicked_at').update({ clicked_at: at });

export interface SubscriptionRow {
  id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
}

/** The user's subscriptions that have not expired. */
export const subscriptionsOf = (db: Knex, appId: string, userId: string, now: Date): Promise<SubscriptionRow[]> =>
  db('push_subscriptions')
    .where({ app_id: appId, user_id: userId })
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now))
    .orderBy('created_at')
    .select('id', 'endpoint', 'p256dh', 'auth');

export async function deleteSubscriptions(db: Knex, appId: string, ids: string[]): Promise<void> {
  if (ids.length > 0) await db('push_subscriptions').where({ app_id: appId }).whereIn('id', ids).delete();
}

/** A delivery taken for its next attempt; `interrupted` when an instance stopped during the last one. */
export type DueDelivery = DeliveryRow & { interrupted: boolean };

const DUE = `p.status = 'pending'
  and (p.next_attempt_at <= :now
       or (p.next_attempt_at is null and p.attempted_at < now() - :staleMs * interval '1 millisecond'))`;

/**
 * Not per-app (the delivery worker): takes the `pending` deliveries of the next provider call (one
 * delivery, or the rows of its campaign batch) and counts the attempt, so that another worker skips
 * them: deliveries waiting for a retry due by `now`, and deliveries whose attempt started more than
 * `staleMs` ago by the database's clock without recording an answer (left by a crash: `interrupted`).
 */
export async function claimDueDeliveries(db: Knex, now: Date, staleMs: number): Promise<DueDelivery[]> {
  const { rows } = await db.raw(
    `with head as (
       select p.app_id, p.id, p.batch_id from push_deliveries p where ${DUE}
       order by p.created_at, p.id limit 1 for update skip locked),
     due as (
       select p.app_id, p.id, p.next_attempt_at is null as interrupted
       from push_deliveries p join head on p.app_id = head.app_id and (p.id = head.id or p.batch_id = head.batch_id)
       where ${DUE} for update of p skip locked)
     update push_deliveries d set attempted_at = now(), attempts = d.attempts + 1, next_attempt_at = null
     from due where d.app_id = due.app_id and d.id = due.id
     returning d.*, due.interrupted`,
    { now, staleMs },
  );
  return rows as DueDelivery[];
}

/** The external ids of these users of the app, by internal id. */
export async function externalIds(db: Knex, appId: string, userIds: string[]): Promise<Map<string, string>> {
  const rows: { id: string; external_id: string }[] = await db('users')
    .where({ app_id: appId })
    .whereIn('id', userIds)
    .select('id', 'external_id');
  return new Map(rows.map((r) => [r.id, r.external_id]));
}
