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
}

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

/** Records the provider's answer on a pending delivery. */
export async function resolveDelivery(
  db: Knex,
  appId: string,
  id: string,
  patch: Pick<DeliveryRow, 'status' | 'provider_message_id' | 'error' | 'recipients' | 'resolved_at'>,
): Promise<DeliveryRow> {
  const [saved] = await db('push_deliveries').where({ app_id: appId, id }).update(patch).returning('*');
  return saved as DeliveryRow;
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
