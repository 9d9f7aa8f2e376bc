// Queries for audiences and for the users a rules-engine definition selects. Every query filters
// by app id.
import type { Knex } from 'knex';
import type { SegmentDefinition } from '../audiences/ast.js';
import type { SqlFragment } from '../audiences/compile.js';

export type QueryMethod = 'rules' | 'llm_sql' | 'sql';

export interface AudienceRow {
  id: string;
  app_id: string;
  name: string;
  description: string | null;
  criteria: string;
  definition: SegmentDefinition | null;
  sql: string | null;
  query_method: QueryMethod;
  confidence: number;
  user_count: string; // bigint
  created_at: Date;
  updated_at: Date;
  counted_at: Date;
}

export interface MemberRow {
  id: string;
  user_id: string;
  email: string | null;
  phone: string | null;
  last_active: Date | null;
  created_at: Date;
}

export async function insertAudience(
  db: Knex,
  row: Omit<AudienceRow, 'definition' | 'user_count'> & { definition: SegmentDefinition | null; user_count: number },
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

/** The organization's time zone for an app (calendar periods in criteria start there). */
export async function appTimeZone(db: Knex, appId: string): Promise<string> {
  const row = await db('apps')
    .join('organizations', 'organizations.id', 'apps.organization_id')
    .where('apps.id', appId)
    .first<{ timezone: string } | undefined>('organizations.timezone');
  return row?.timezone || 'UTC';
}

/** Names of the events the app has tracked (the event dictionary). */
export async function knownEventNames(db: Knex, appId: string, limit = 2_000): Promise<string[]> {
  const rows = await db('event_definitions')
    .where({ app_id: appId })
    .orderBy('volume', 'desc')
    .limit(limit)
    .select<{ event_name: string }[]>('event_name');
  return rows.map((r) => r.event_name);
}

/** How many of the app's users satisfy a compiled condition. */
export async function countMatchingUsers(db: Knex, appId: string, where: SqlFragment): Promise<number> {
  const { rows } = await db.raw(`select count(*) as n from users u where u.app_id = ?::uuid and (${where.sql})`, [
    appId,
    ...where.bindings,
  ]);
  return Number((rows as { n: string }[])[0]?.n ?? 0);
}

/** One page of the users satisfying a compiled condition, oldest first (stable across pages). */
export async function listMatchingUsers(
  db: Knex,
  appId: string,
  where: SqlFragment,
  limit: number,
  offset: number,
): Promise<MemberRow[]> {
  const { rows } = await db.raw(
    `select u.id, u.external_id as user_id, u.email, u.phone, u.last_active, u.created_at
     from users u where u.app_id = ?::uuid and (${where.sql})
     order by u.created_at, u.id limit ? offset ?`,
    [appId, ...where.bindings, limit, offset],
  );
  return rows as MemberRow[];
}
