// Queries for website traffic: visits, Web Push subscriptions, the apps an origin may belong to,
// and folding an anonymous visitor's user row into a known user.
import type { Knex } from 'knex';
import type { AppRow } from '../../storage/tenancy.js';

export interface PushSubscriptionRow {
  id: string;
  app_id: string;
  user_id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
  expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Stores a subscription; the same endpoint again updates its owner and keys and keeps its id. */
export async function upsertPushSubscription(
  db: Knex,
  row: Pick<PushSubscriptionRow, 'id' | 'app_id' | 'user_id' | 'endpoint' | 'p256dh' | 'auth' | 'expires_at'>,
  now: Date,
): Promise<string> {
  const [stored] = await db('push_subscriptions')
    .insert({ ...row, created_at: now, updated_at: now })
    .onConflict(['app_id', 'endpoint'])
    .merge({ user_id: row.user_id, p256dh: row.p256dh, auth: row.auth, expires_at: row.expires_at, updated_at: now })
    .returning<{ id: string }[]>('id');
  return stored!.id;
}

/** Apps whose website_url host or authorized_domains could allow this host (then checked exactly). */
export function appsForHost(db: Knex, hostname: string, entries: string[]) {
  return db<AppRow>('apps')
    .whereRaw('position(? in lower(website_url)) > 0', [hostname])
    .orWhereRaw(
      'exists (select 1 from jsonb_array_elements_text(authorized_domains) d where lower(trim(d)) = any(?::text[]))',
      [entries],
    )
    .limit(50)
    .select('website_url', 'authorized_domains');
}

export async function hasAliases(db: Knex, appId: string, userId: string): Promise<boolean> {
  const row = await db('user_aliases').where({ app_id: appId, user_id: userId }).first('alias_id');
  return row !== undefined;
}

/** Moves everything of user `fromId` to user `toId` (same app) and deletes `fromId`. */
export async function mergeUserInto(trx: Knex.Transaction, appId: string, fromId: string, toId: string, now: Date) {
  for (const table of ['events', 'visits', 'push_subscriptions']) {
    await trx(table).where({ app_id: appId, user_id: fromId }).update({ user_id: toId });
  }
  // Deliveries belong to the push feature; move them too when that table exists, so the delete
  // below never cascades them away.
  const { rows } = await trx.raw(`select to_regclass('push_deliveries') is not null as present`);
  if (rows[0]?.present) {
    await trx('push_deliveries').where({ app_id: appId, user_id: fromId }).update({ user_id: toId });
  }
  // Campaign sends keep the cooldown and once-per-occurrence history (a send the known user
  // already has for the same occurrence wins); unread trigger occurrences follow the events.
  await trx.raw(
    `update campaign_sends s set user_id = ? where s.app_id = ? and s.user_id = ?
       and not exists (select 1 from campaign_sends t where t.app_id = s.app_id and t.campaign_id = s.campaign_id
                       and t.user_id = ? and t.occurrence = s.occurrence)`,
    [toId, appId, fromId, toId],
  );
  await trx('campaign_trigger_outbox').where({ app_id: appId, user_id: fromId }).update({ user_id: toId });
  await trx('user_aliases').where({ app_id: appId, user_id: fromId }).update({ user_id: toId });
  await trx.raw(
    `update users t set event_count = t.event_count + f.event_count,
       last_active = case when t.last_active is null then f.last_active
                          when f.last_active is null then t.last_active
                          else greatest(t.last_active, f.last_active) end,
       created_at = least(t.created_at, f.created_at), updated_at = ?
     from users f where t.app_id = ? and t.id = ? and f.app_id = t.app_id and f.id = ?`,
    [now, appId, toId, fromId],
  );
  await trx('users').where({ app_id: appId, id: fromId }).delete();
}

/** Events stored for `fromId` after a merge committed (a request that raced it) follow it too. */
export async function moveLateEvents(db: Knex, appId: string, fromId: string, toId: string): Promise<void> {
  await db('events').where({ app_id: appId, user_id: fromId }).update({ user_id: toId });
}
