// Every value Tally seals with SECRET_KEY, and the pass that seals them again under the current
// key after a rotation. Not per-app: the pass walks every app's rows, a page at a time. Each row
// is rewritten on its own, and only if it still holds the value that was read, so the pass can be
// interrupted, run twice or run by two instances at once without losing or mixing anything.
import type { Knex } from 'knex';
import { type KeyRing, openWithRing, type SealPurpose, SecretsUnreadableError, seal } from '../secrets.js';

interface SealedColumn {
  /** The name reported in the counts. */
  name: 'push_providers' | 'identity_secrets';
  table: string;
  column: string;
  /** Columns that name one row (app_id first). */
  key: string[];
  purpose: SealPurpose;
}

/** Push provider secrets (access tokens, REST API keys, webhook secrets, VAPID private keys) and identity secrets. */
const SEALED: SealedColumn[] = [
  {
    name: 'push_providers',
    table: 'push_providers',
    column: 'secrets',
    key: ['app_id'],
    purpose: 'push-provider-secrets',
  },
  {
    name: 'identity_secrets',
    table: 'app_identity_secrets',
    column: 'secret',
    key: ['app_id', 'id'],
    purpose: 'identity-secrets',
  },
];

export interface ResealCounts {
  /** Values that opened with a previous key and are now sealed with the current one. */
  resealed: number;
  /** Values already sealed with the current key. */
  current: number;
  /** Values no key of the ring opens (left as they are; the operator must set them again). */
  unreadable: number;
}

const PAGE = 200;

async function resealColumn(db: Knex, ring: KeyRing, c: SealedColumn): Promise<ResealCounts> {
  const counts: ResealCounts = { resealed: 0, current: 0, unreadable: 0 };
  let after: string[] | null = null;
  for (;;) {
    const rows: Record<string, string>[] = await db(c.table)
      .select([...c.key, c.column])
      .whereNotNull(c.column)
      .modify((q) => {
        if (after)
          q.whereRaw(`(${c.key.map(() => '??').join(', ')}) > (${c.key.map(() => '?').join(', ')})`, [
            ...c.key,
            ...after,
          ]);
      })
      .orderBy(c.key)
      .limit(PAGE);
    for (const row of rows) {
      const appId = row.app_id!;
      const sealed = row[c.column]!;
      try {
        const opened = openWithRing(ring, appId, sealed, c.purpose);
        if (opened.current) {
          counts.current++;
          continue;
        }
        const match = Object.fromEntries(c.key.map((k) => [k, row[k]]));
        const changed = await db(c.table)
          .where({ ...match, [c.column]: sealed })
          .update({ [c.column]: seal(ring.secretKey!, appId, opened.value, c.purpose) });
        // A row another pass (or a new configuration) changed meanwhile is already current.
        if (changed > 0) counts.resealed++;
        else counts.current++;
      } catch (err) {
        if (!(err instanceof SecretsUnreadableError)) throw err;
        counts.unreadable++;
      }
    }
    if (rows.length < PAGE) return counts;
    after = c.key.map((k) => String(rows[rows.length - 1]![k]));
  }
}

/** Not per-app: seals every stored secret again under the ring's current key; counts per kind. */
export async function resealAll(db: Knex, ring: KeyRing): Promise<Record<SealedColumn['name'], ResealCounts>> {
  const result = {} as Record<SealedColumn['name'], ResealCounts>;
  for (const c of SEALED) result[c.name] = await resealColumn(db, ring, c);
  return result;
}
