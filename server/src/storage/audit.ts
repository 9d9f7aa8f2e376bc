// Queries for the audit trail: one row per erasure, export or campaign creation (who, when, which
// user id or campaign, counts; never the data itself).
import type { Knex } from 'knex';

export type AuditAction = 'user.erase' | 'user.export' | 'campaign.create';
export type ActorKind = 'admin' | 'rest' | 'mcp';

export interface AuditRow {
  id: string;
  app_id: string;
  action: AuditAction;
  /** The key's id, or `admin`. */
  actor: string;
  /** Null on entries written before the kind was recorded (erasures and exports: `admin` or a REST key). */
  actor_kind: ActorKind | null;
  /** The key's label, when the actor is a key. */
  actor_name: string | null;
  /** The user identifier the request named; null for actions that are not about one user. */
  user_ref: string | null;
  campaign_id: string | null;
  counts: Record<string, number>;
  completed: boolean;
  created_at: Date;
}

export type NewAuditEntry = Omit<AuditRow, 'actor_kind' | 'actor_name' | 'campaign_id'> &
  Partial<Pick<AuditRow, 'actor_kind' | 'actor_name' | 'campaign_id'>>;

export async function insertAuditEntry(db: Knex, row: NewAuditEntry): Promise<void> {
  await db('audit_entries').insert({ ...row, counts: JSON.stringify(row.counts) });
}

/** A page of the app's audit trail, newest first. */
export const listAuditEntries = (db: Knex, appId: string, limit: number, offset: number) =>
  db<AuditRow>('audit_entries')
    .where({ app_id: appId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit)
    .offset(offset);

export async function countAuditEntries(db: Knex, appId: string): Promise<number> {
  const row = await db('audit_entries').where({ app_id: appId }).count<{ n: string }[]>('* as n').first();
  return Number(row?.n ?? 0);
}
