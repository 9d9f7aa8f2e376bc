// Queries for the audit trail: one row per erasure or export (who, when, which user id, counts).
import type { Knex } from 'knex';

export interface AuditRow {
  id: string;
  app_id: string;
  action: 'user.erase' | 'user.export';
  actor: string;
  user_ref: string;
  counts: Record<string, number>;
  completed: boolean;
  created_at: Date;
}

export async function insertAuditEntry(db: Knex, row: AuditRow): Promise<void> {
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
