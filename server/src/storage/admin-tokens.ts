// Queries for the admin API's tokens. Not per-app: the admin token acts on the whole installation.
// Only SHA-256 hashes are stored; a token whose `expires_at` has passed no longer authenticates.
import type { Knex } from 'knex';

export interface AdminTokenRow {
  id: string;
  token_hash: string;
  label: string;
  created_at: Date;
  expires_at: Date | null;
}

/** Not per-app: stores a new token's hash. */
export async function insertAdminToken(db: Knex, row: AdminTokenRow): Promise<AdminTokenRow> {
  const [inserted] = await db('admin_tokens').insert(row).returning<AdminTokenRow[]>('*');
  return inserted!;
}

/** Not per-app: the token with this hash, if it is still valid at `now`. */
export const findValidAdminToken = (db: Knex, tokenHash: string, now: Date) =>
  db<AdminTokenRow>('admin_tokens')
    .where({ token_hash: tokenHash })
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now))
    .first();

/** Not per-app: every token still valid at `now`, newest first. */
export const validAdminTokens = (db: Knex, now: Date) =>
  db<AdminTokenRow>('admin_tokens')
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now))
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);

/**
 * Not per-app: every valid token but `keepId` ends at `endsAt` (or keeps an earlier end it
 * already has). Returns the ids of the tokens it changed.
 */
export async function endOtherAdminTokens(db: Knex, keepId: string, now: Date, endsAt: Date): Promise<string[]> {
  const rows = await db('admin_tokens')
    .whereNot({ id: keepId })
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', endsAt))
    .where((q) => q.whereNull('expires_at').orWhere('expires_at', '>', now))
    .update({ expires_at: endsAt })
    .returning<{ id: string }[]>('id');
  return rows.map((r) => r.id);
}
