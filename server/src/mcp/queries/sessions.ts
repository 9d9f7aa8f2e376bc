// MCP session records. Sessions belong to an MCP key (and its organization), not to an app, so
// these queries are per key.
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
  /** The logging level the client set (logging/setLevel), or null. */
  log_level: string | null;
}

export type NewSession = Omit<McpSessionRow, 'last_seen_at' | 'log_level'>;

export interface SessionPolicy {
  /** Most sessions one key may hold. */
  max: number;
  /** Sessions last used before this have expired (they are deleted here). */
  expiredBefore: Date;
  /** Sessions last used at or before this may be evicted to make room. */
  evictableBefore: Date;
}

export type OpenOutcome =
  | { opened: true; evicted: string[] }
  /** The key holds `max` sessions, all used after `evictableBefore`; the least recent was used at `oldestUse`. */
  | { opened: false; open: number; oldestUse: Date };

class Refused extends Error {
  constructor(readonly outcome: OpenOutcome) {
    super('refused');
  }
}

/**
 * Opens a session under the key's cap, in one transaction that first locks the key's row: opens
 * of one key are serialised across every process on the database, so the count, the eviction and
 * the insert cannot interleave. At the cap, the least recently used sessions idle since
 * `evictableBefore` make room (the DELETE re-checks their idleness, so a session used meanwhile is
 * kept); when there are not enough of them, nothing changes and the outcome says so.
 */
export async function openSessionUnderCap(db: Knex, row: NewSession, policy: SessionPolicy): Promise<OpenOutcome> {
  try {
    return await db.transaction(async (tx) => {
      await tx('api_keys').where({ id: row.key_id }).forNoKeyUpdate().first('id');
      await tx('mcp_sessions').where({ key_id: row.key_id }).andWhere('last_seen_at', '<', policy.expiredBefore).del();
      const [held] = await tx('mcp_sessions')
        .where({ key_id: row.key_id })
        .select<{ n: string; oldest: Date | null }[]>(tx.raw('count(*) as n'), tx.raw('min(last_seen_at) as oldest'));
      const open = Number(held?.n ?? 0);
      const excess = open - policy.max + 1;
      let evicted: string[] = [];
      if (excess > 0) {
        const { rows } = await tx.raw<{ rows: { id: string }[] }>(
          `delete from mcp_sessions
            where id in (select id from mcp_sessions
                          where key_id = ? and last_seen_at <= ?
                          order by last_seen_at, id limit ?)
              and last_seen_at <= ?
           returning id`,
          [row.key_id, policy.evictableBefore, excess, policy.evictableBefore],
        );
        evicted = rows.map((r) => r.id);
        if (evicted.length < excess) throw new Refused({ opened: false, open, oldestUse: held!.oldest! });
      }
      await tx('mcp_sessions').insert({
        ...row,
        client_capabilities: JSON.stringify(row.client_capabilities),
        client_info: JSON.stringify(row.client_info),
        last_seen_at: row.created_at,
      });
      return { opened: true as const, evicted };
    });
  } catch (err) {
    if (err instanceof Refused) return err.outcome;
    throw err;
  }
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

/** Records the logging level of the key's session; false when the session is gone. */
export async function setSessionLogLevel(db: Knex, keyId: string, id: string, level: string): Promise<boolean> {
  return (await db('mcp_sessions').where({ id, key_id: keyId }).update({ log_level: level })) > 0;
}

/** The key's open sessions, least recently used first (for tests and diagnostics). */
export async function sessionsOfKey(db: Knex, keyId: string, since: Date): Promise<McpSessionRow[]> {
  return db<McpSessionRow>('mcp_sessions')
    .where({ key_id: keyId })
    .andWhere('last_seen_at', '>=', since)
    .orderBy([{ column: 'last_seen_at' }, { column: 'id' }]);
}

export async function deleteSession(db: Knex, keyId: string, id: string): Promise<boolean> {
  return (await db('mcp_sessions').where({ id, key_id: keyId }).del()) > 0;
}

/** Maintenance: deletes sessions idle since before `before` (every key's). */
export async function deleteIdleSessions(db: Knex, before: Date): Promise<number> {
  return db('mcp_sessions').where('last_seen_at', '<', before).del();
}

/** Sessions of every key used since `since` (the metrics' open sessions; not per app by nature). */
export async function countSessionsUsedSince(db: Knex, since: Date): Promise<number> {
  const row = await db('mcp_sessions').where('last_seen_at', '>=', since).count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}
