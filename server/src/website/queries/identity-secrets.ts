// Queries for the identity secrets of an app (website identity verification). The secret column
// holds the secret sealed with SECRET_KEY; opening it is the service's business.
import type { Db, Tx } from '../../storage/handle.js';

export interface IdentitySecretRow {
  id: string;
  app_id: string;
  /** The sealed secret. */
  secret: string;
  created_at: Date;
}

const oldestFirst = [
  { column: 'created_at', order: 'asc' },
  { column: 'id', order: 'asc' },
] as const;

/** The app's active secrets without their values, oldest first. */
export const identitySecretIds = (db: Db, appId: string): Promise<Pick<IdentitySecretRow, 'id' | 'created_at'>[]> =>
  db('app_identity_secrets')
    .where({ app_id: appId })
    .orderBy([...oldestFirst])
    .select('id', 'created_at');

/** The app's active secrets, sealed, oldest first. */
export const sealedIdentitySecrets = (db: Db, appId: string): Promise<Pick<IdentitySecretRow, 'id' | 'secret'>[]> =>
  db('app_identity_secrets')
    .where({ app_id: appId })
    .orderBy([...oldestFirst])
    .select('id', 'secret');

/**
 * How many secrets the app holds, with the app's row locked until the transaction ends, so that
 * two concurrent generations cannot both pass a count.
 */
export async function lockedIdentitySecretCount(tx: Tx, appId: string): Promise<number> {
  await tx('apps').where({ id: appId }).forUpdate().first('id');
  const [counted] = await tx('app_identity_secrets').where({ app_id: appId }).count({ count: '*' });
  return Number(counted?.count ?? 0);
}

export async function insertIdentitySecret(
  db: Db,
  appId: string,
  row: Omit<IdentitySecretRow, 'app_id'>,
): Promise<Pick<IdentitySecretRow, 'id' | 'created_at'>> {
  const [inserted] = await db('app_identity_secrets')
    .insert({ ...row, app_id: appId })
    .returning<Pick<IdentitySecretRow, 'id' | 'created_at'>[]>(['id', 'created_at']);
  return inserted!;
}

/** Deletes one secret; returns how many rows went (0 when the app has no such secret). */
export const deleteIdentitySecret = (db: Db, appId: string, id: string): Promise<number> =>
  db('app_identity_secrets').where({ app_id: appId, id }).delete();
