// Queries for push: provider configurations, deliveries, and the Web Push subscriptions the
// browser SDK registers (table `push_subscriptions`, owned by the website migration).
import type { Knex } from 'knex';
import type { ProviderKind } from '../push/provider.js';

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

/** pending: written, provider not answered yet; unknown: left pending by a crash, never resent. */
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
  /** When the sweeper last resent it (a `pending` row is stale some time after this or its creation). */
  attempted_at?: Date | null;
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
 * Records the provider's answer on a delivery still `pending`; a row the sweeper resolved in the
 * meantime keeps its status. Returns the row as it is now.
 */
export async function resolveDelivery(
  db: Knex,
  appId: string,
  id: string,
  patch: DeliveryResolution,
): Promise<DeliveryRow> {
  const [saved] = await db('push_deliveries')
    .where({ app_id: appId, id, status: 'pending' })
    .update(patch)
    .returning('*');
  return (
    (saved as DeliveryRow | undefined) ??
    (await db<DeliveryRow>('push_deliveries').where({ app_id: appId, id }).first())!
  );
}

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

/**
 * Not per-app (the sweeper): claims `pending` deliveries whose last attempt started more than
 * `staleMs` ago by the database's clock (left by a crash), batches together, marking the attempt
 * so that another sweeper skips them.
 */
export async function claimStaleDeliveries(db: Knex, staleMs: number, limit: number): Promise<DeliveryRow[]> {
  const { rows } = await db.raw(
    `update push_deliveries d set attempted_at = now(), attempts = d.attempts + 1
     where (d.app_id, d.id) in (
       select p.app_id, p.id from push_deliveries p
       where p.status = 'pending' and p.attempted_at < now() - ? * interval '1 millisecond'
       order by p.batch_id nulls last, p.created_at limit ? for update skip locked)
     returning d.*`,
    [staleMs, limit],
  );
  return rows as DeliveryRow[];
}

/** The external ids of these users of the app, by internal id. */
export async function externalIds(db: Knex, appId: string, userIds: string[]): Promise<Map<string, string>> {
  const rows: { id: string; external_id: string }[] = await db('users')
    .where({ app_id: appId })
    .whereIn('id', userIds)
    .select('id', 'external_id');
  return new Map(rows.map((r) => [r.id, r.external_id]));
}
