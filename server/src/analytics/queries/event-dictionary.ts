// The event dictionary: one definition per event name an app has tracked (created by the event
// writer), with the display name, description, category and property notes people add.
import type { Knex } from 'knex';

export interface EventDefinitionRow {
  id: string;
  app_id: string;
  event_name: string;
  display_name: string | null;
  description: string | null;
  category: string | null;
  archived: boolean;
  properties: Record<string, string>;
  first_seen: Date;
  last_seen: Date;
  /** Events in the 30 days up to and including `since` + 29 days (the query's window). */
  volume_30d: number;
}

export interface DictionaryFilter {
  includeArchived: boolean;
  onlyUndefined: boolean;
  /** Case-insensitive part of the event name. */
  search?: string;
  limit: number;
  offset: number;
  /** First day of the 30-day volume window. */
  since: string;
}

const volume = (db: Knex, since: string) =>
  db('event_daily_counts as c')
    .sum('c.count')
    .whereRaw('c.app_id = d.app_id and c.event_name = d.event_name')
    .andWhere('c.day', '>=', since);

function filtered(db: Knex, appId: string, f: Omit<DictionaryFilter, 'limit' | 'offset' | 'since'>) {
  const q = db('event_definitions as d').where('d.app_id', appId);
  if (!f.includeArchived) q.andWhere('d.archived', false);
  if (f.onlyUndefined) q.andWhere((w) => w.whereNull('d.description').orWhere('d.description', ''));
  if (f.search) q.andWhereRaw("d.event_name ILIKE '%' || ? || '%' ESCAPE '\\'", [f.search.replace(/[\\%_]/g, '\\$&')]);
  return q;
}

export async function listEventDefinitions(
  db: Knex,
  appId: string,
  f: DictionaryFilter,
): Promise<{ rows: EventDefinitionRow[]; total: number }> {
  const [counted] = await filtered(db, appId, f).count({ n: '*' });
  const rows = await filtered(db, appId, f)
    .select('d.*', db.raw('coalesce((?), 0)::bigint as volume_30d', [volume(db, f.since)]))
    .orderBy([
      { column: 'd.last_seen', order: 'desc' },
      { column: 'd.event_name', order: 'asc' },
    ])
    .limit(f.limit)
    .offset(f.offset);
  return { rows: rows.map(normalise), total: Number(counted?.n ?? 0) };
}

export async function findEventDefinition(
  db: Knex,
  appId: string,
  by: { id?: string; name?: string },
  since: string,
): Promise<EventDefinitionRow | undefined> {
  const q = db('event_definitions as d').where('d.app_id', appId);
  if (by.id !== undefined) q.andWhere('d.id', by.id);
  if (by.name !== undefined) q.andWhere('d.event_name', by.name);
  const row = await q.first('d.*', db.raw('coalesce((?), 0)::bigint as volume_30d', [volume(db, since)]));
  return row ? normalise(row) : undefined;
}

export async function updateEventDefinition(
  db: Knex,
  appId: string,
  id: string,
  patch: Partial<Pick<EventDefinitionRow, 'display_name' | 'description' | 'category' | 'archived' | 'properties'>>,
): Promise<void> {
  const { properties, ...rest } = patch;
  await db('event_definitions')
    .where({ app_id: appId, id })
    .update({ ...rest, ...(properties === undefined ? {} : { properties: JSON.stringify(properties) }) });
}

function normalise(row: EventDefinitionRow & { volume_30d: string | number }): EventDefinitionRow {
  return {
    ...row,
    volume_30d: Number(row.volume_30d),
    archived: Boolean(row.archived),
    properties: row.properties ?? {},
  };
}
