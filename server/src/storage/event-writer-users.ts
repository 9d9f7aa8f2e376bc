// The users of a write of the event writer (event-writer.ts): every identifier resolved to its
// user, unknown ones created (marked where they came from), and each user's row key-share locked
// and read in the write's transaction, so the identity rule of the website surface is checked on
// the rows as they are committed when the events are written.
import type { Knex } from 'knex';
import { uuidv7 } from '../ids.js';
import { openToBrowsers, resolveIdentifiers, type UserRow } from './users.js';

export const ROWS_PER_STATEMENT = 1_000;

/** What user resolution reads of an event (storage/event-writer.ts IngestEvent). */
interface UserRef {
  userRef: string;
  createdAt: Date;
  source: 'api' | 'website' | 'demo';
  verified?: boolean;
}

/**
 * Internal ids for every identifier of these events, creating users for unknown ones, and which
 * of those users are closed to browsers without a hash (read from the rows as locked). The users
 * are key-share locked until the write commits, so an erasure waits for it; a user erased while
 * this write resolved it is created anew (later events of an erased id start an unrelated user).
 * A REST write of a user after this read commits after this write: the events came first.
 */
export async function resolveOrCreateUsers(trx: Knex.Transaction, appId: string, events: UserRef[]) {
  for (;;) {
    const ids = await resolveOrCreateUsersOnce(trx, appId, events);
    const locked = new Set<string>();
    const closed = new Set<string>();
    for (const chunk of chunks([...new Set(ids.values())].sort(), ROWS_PER_STATEMENT)) {
      const rows: Pick<UserRow, 'id' | 'created_via' | 'api_written_at'>[] = await trx('users')
        .where({ app_id: appId })
        .whereIn('id', chunk)
        .forKeyShare()
        .select('id', 'created_via', 'api_written_at');
      for (const r of rows) {
        locked.add(r.id);
        if (!openToBrowsers(r)) closed.add(r.id);
      }
    }
    if ([...ids.values()].every((id) => locked.has(id))) return { ids, closed };
  }
}

const CREATED_VIA_RANK: Record<UserRow['created_via'], number> = { website: 0, website_verified: 1, api: 2 };

async function resolveOrCreateUsersOnce(trx: Knex.Transaction, appId: string, events: UserRef[]) {
  const earliest = new Map<string, Date>();
  const createdVia = new Map<string, UserRow['created_via']>();
  for (const e of events) {
    const seen = earliest.get(e.userRef);
    if (!seen || e.createdAt < seen) earliest.set(e.userRef, e.createdAt);
    // Where the user came from decides what a browser may do with it (identity verification): a
    // new user named by a REST event and by a website event of the same write is a REST user.
    const via = e.source !== 'website' ? 'api' : e.verified ? 'website_verified' : 'website';
    const known = createdVia.get(e.userRef);
    if (!known || CREATED_VIA_RANK[via] > CREATED_VIA_RANK[known]) createdVia.set(e.userRef, via);
  }
  const refs = [...earliest.keys()];
  const ids = new Map<string, string>();
  for (const chunk of chunks(refs, ROWS_PER_STATEMENT)) {
    for (const [ref, id] of await resolveIdentifiers(trx, appId, chunk)) ids.set(ref, id);
  }
  const unknown = refs.filter((r) => !ids.has(r)).sort();
  for (const chunk of chunks(unknown, ROWS_PER_STATEMENT)) {
    const inserted = await trx('users')
      .insert(
        chunk.map((ref) => ({
          id: uuidv7(),
          app_id: appId,
          external_id: ref,
          created_at: earliest.get(ref),
          created_via: createdVia.get(ref),
        })),
      )
      .onConflict(['app_id', 'external_id'])
      .ignore()
      .returning(['id', 'external_id']);
    for (const r of inserted) ids.set(r.external_id, r.id);
    const raced = chunk.filter((r) => !ids.has(r));
    if (raced.length > 0) {
      const rows = await trx('users')
        .where({ app_id: appId })
        .whereIn('external_id', raced)
        .select('id', 'external_id');
      for (const r of rows) ids.set(r.external_id, r.id);
    }
  }
  return ids;
}

export function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
