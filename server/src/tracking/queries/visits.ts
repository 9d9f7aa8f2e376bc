// The visit a website event's bot verdict comes from (ingestion.ts, step 3).
import type { Knex } from 'knex';

/** Whether the latest visit of the user an identifier names was classified as a bot; null without visits. */
export async function latestVisitIsBot(db: Knex, appId: string, identifier: string): Promise<boolean | null> {
  const row = await db('visits as v')
    .join('users as u', function () {
      this.on('u.app_id', 'v.app_id').andOn('u.id', 'v.user_id');
    })
    .leftJoin('user_aliases as a', function () {
      this.on('a.app_id', 'u.app_id').andOn('a.user_id', 'u.id').andOnVal('a.alias_id', identifier);
    })
    .where('v.app_id', appId)
    .andWhere((q) => q.where('u.external_id', identifier).orWhereNotNull('a.alias_id'))
    .orderBy('v.created_at', 'desc')
    .first('v.is_bot');
  return row ? Boolean(row.is_bot) : null;
}
