// Queries for audiences. Every query filters by app id. (The users an audience selects are
// counted and listed by the natural-language compiler, language/queries/compile.ts, through the sandbox.)
import type { Knex } from 'knex';
import type { Segment } from '../../language/ast.js';

export type QueryMethod = 'rules' | 'llm' | 'llm_sql' | 'sql';

export interface AudienceRow {
  id: string;
  app_id: string;
  name: string;
  description: string | null;
  criteria: string;
  definition: Segment | null;
  sql: string | null;
  query_method: QueryMethod;
  confidence: number;
  user_count: string; // bigint
  created_at: Date;
  updated_at: Date;
  counted_at: Date;
}

export async function insertAudience(
  db: Knex,
  row: Omit<AudienceRow, 'definition' | 'user_count'> & { definition: Segment | null; user_count: number },
): Promise<AudienceRow> {
  const [inserted] = await db('audiences')
    .insert({ ...row, definition: row.definition === null ? null : JSON.stringify(row.definition) })
    .returning<AudienceRow[]>('*');
  return inserted!;
}

export const findAudience = (db: Knex, appId: string, id: string) =>
  db<AudienceRow>('audiences').where({ app_id: appId, id }).first();

/** A page of the app's audiences, newest first. */
export const listAudiences = (db: Knex, appId: string, limit: number, offset: number) =>
  db<AudienceRow>('audiences')
    .where({ app_id: appId })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(limit)
    .offset(offset);

export async function countAudiences(db: Knex, appId: string): Promise<number> {
  const row = await db('audiences').where({ app_id: appId }).count<{ count: string }[]>('* as count').first();
  return Number(row?.count ?? 0);
}

export async function updateAudienceCount(
  db: Knex,
  appId: string,
  id: string,
  userCount: number,
  at: Date,
): Promise<AudienceRow | undefined> {
  const [row] = await db('audiences')
    .where({ app_id: appId, id })
    .update({ user_count: userCount, counted_at: at, updated_at: at })
    .returning<AudienceRow[]>('*');
  return row;
}

/** The ids of the app's audiences. */
export const listAudienceIds = async (db: Knex, appId: string): Promise<string[]> =>
  (await db('audiences').where({ app_id: appId }).orderBy('id').select('id')).map((r: { id: string }) => r.id);
