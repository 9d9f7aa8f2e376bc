// MCP session records. Sessions belong to an MCP key (and its organization), not to an app.
import type { Knex } from 'knex';

export interface McpSessionRow {
  id: string;
  key_id: string;
  organization_id: string;
  protocol_version: string;
  client_capabilities: Record<string, unknown>;
  client_info: Record<string, unknown>;
  created_at: Date;
  last_seen_at: Date;
}

/** How many of the key's sessions were used since `since` (the open ones). */
export async function countOpenSessions(db: Knex, keyId: string, since: Date): Promise<number> {
  const [row] = await db('mcp_sessions')
    .where({ key_id: keyId })
    .andWhere('last_seen_at', '>=', since)
    .count({ n: '*' });
  return Number(row?.n ?? 0);
}

export async function insertSession(db: Knex, row: Omit<McpSessionRow, 'last_seen_at'>): Promise<void> {
  await db('mcp_sessions').insert({
    ...row,
    client_capabilities: JSON.stringify(row.client_capabilities),
    client_info: JSON.stringify(row.client_info),
    last_seen_at: row.created_at,
  });
}

/** The session of this key used since `since`, marked as used now; undefined if there is none. */
export async function touchSession(
  db: Knex,
  keyId: string,
  id: string,
  since: Date,
  now: Date,
): Promise<McpSessionRow | undefined> {
  const [row] = await db<McpSessionRow>('mcp_sessions')
    .where({ id, key_id: keyId })
    .andWhere('last_seen_at', '>=', since)
    .update({ last_seen_at: now })
    .returning('*');
  return row;
}

export async function deleteSession(db: Knex, keyId: string, id: string): Promise<boolean> {
  return (await db('mcp_sessions').where({ id, key_id: keyId }).del()) > 0;
}

/** Maintenance: deletes sessions idle since before `before` (every key's). */
export async function deleteIdleSessions(db: Knex, before: Date): Promise<number> {
  return db('mcp_sessions').where('last_seen_at', '<', before).del();
}
