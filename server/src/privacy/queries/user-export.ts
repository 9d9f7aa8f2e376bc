// Queries for exporting one user: each kind of record read a page at a time in a stable order
// (keyset on the record's time and id), so an export never holds a connection for long. The
// cursor carries the time as the database prints it, so microseconds survive the round trip.
import type { Knex } from 'knex';

/** Where the next page starts: after this record. */
export interface ExportCursor {
  at: string;
  id: string;
}

/** The tables an export reads; every column of each is read (the export holds all of them). */
export type ExportTable = 'events' | 'visits' | 'push_subscriptions' | 'push_deliveries';

/** One page of the user's records in `table`, oldest first, each with the cursor that follows it. */
export async function userRecordsPage(
  db: Knex,
  table: ExportTable,
  appId: string,
  userId: string,
  after: ExportCursor | null,
  limit: number,
): Promise<{ rows: Record<string, unknown>[]; next: ExportCursor | null }> {
  const q = db(table)
    .where({ app_id: appId, user_id: userId })
    .select([`${table}.*`, db.raw('created_at::text as cursor_at')])
    .orderBy([
      { column: 'created_at', order: 'asc' },
      { column: 'id', order: 'asc' },
    ])
    .limit(limit);
  if (after) q.andWhereRaw('(created_at, id) > (?::timestamptz, ?::uuid)', [after.at, after.id]);
  const rows = (await q) as (Record<string, unknown> & { cursor_at: string; id: string })[];
  const last = rows.at(-1);
  return {
    rows: rows.map(({ cursor_at: _, ...r }) => r),
    next: rows.length === limit && last ? { at: last.cursor_at, id: last.id } : null,
  };
}
