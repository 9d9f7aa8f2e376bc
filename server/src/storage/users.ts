// Queries for users and their aliases. A user is found by its external id or by one of its aliases.
import type { Knex } from 'knex';
import type { Db } from './handle.js';

export interface UserRow {
  id: string;
  app_id: string;
  external_id: string;
  email: string | null;
  phone: string | null;
  properties: Record<string, unknown>;
  origin: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  last_active: Date | null;
  event_count: string; // bigint
  /** Where the user was created: `api`, `website` (a browser, unverified) or `website_verified`. */
  created_via: 'api' | 'website' | 'website_verified';
  /** When the REST users API first wrote the user (profile, alias or rename); null if never. */
  api_written_at: Date | null;
}

/**
 * Whether a browser without a valid user_hash may create, change or add to this user: only a
 * user the website created without proof of identity, and that the REST users API never wrote.
 * Every key-less write checks this on the row it resolved (locked, or read in the transaction
 * that writes), so the REST API creating or writing the user meanwhile cannot slip past it.
 */
export function openToBrowsers(user: Pick<UserRow, 'created_via' | 'api_written_at'>): boolean {
  return user.created_via === 'website' && user.api_written_at === null;
}

export interface AliasRow {
  app_id: string;
  alias_id: string;
  user_id: string;
  created_at: Date;
}

export const findUserById = (db: Knex, appId: string, id: string) =>
  db<UserRow>('users').where({ app_id: appId, id }).first();

export const findUserByExternalId = (db: Knex, appId: string, externalId: string) =>
  db<UserRow>('users').where({ app_id: appId, external_id: externalId }).first();

export const findAlias = (db: Knex, appId: string, aliasId: string) =>
  db<AliasRow>('user_aliases').where({ app_id: appId, alias_id: aliasId }).first();

/** The user an identifier names: its external id first, else an alias. */
export async function findUserByIdentifier(db: Knex, appId: string, identifier: string): Promise<UserRow | undefined> {
  const direct = await findUserByExternalId(db, appId, identifier);
  if (direct) return direct;
  const alias = await findAlias(db, appId, identifier);
  return alias ? findUserById(db, appId, alias.user_id) : undefined;
}

/** Resolves many identifiers at once: identifier -> internal user id, for those that exist. */
export async function resolveIdentifiers(db: Knex, appId: string, identifiers: string[]): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  if (identifiers.length === 0) return found;
  const direct = await db('users')
    .where({ app_id: appId })
    .whereIn('external_id', identifiers)
    .select('id', 'external_id');
  for (const r of direct) found.set(r.external_id, r.id);
  const rest = identifiers.filter((i) => !found.has(i));
  if (rest.length > 0) {
    const aliases = await db('user_aliases')
      .where({ app_id: appId })
      .whereIn('alias_id', rest)
      .select('alias_id', 'user_id');
    for (const r of aliases) found.set(r.alias_id, r.user_id);
  }
  return found;
}

export const listAliases = (db: Knex, appId: string, userId: string) =>
  db<AliasRow>('user_aliases').where({ app_id: appId, user_id: userId }).orderBy('created_at');

/** Sets the email and merges properties into the profiles of existing users, by external id. */
export async function setProfiles(
  db: Knex,
  appId: string,
  profiles: { externalId: string; email: string; properties: Record<string, unknown> }[],
): Promise<void> {
  if (profiles.length === 0) return;
  await db.raw(
    `update users u set email = v.email, properties = u.properties || v.props::jsonb, updated_at = now()
     from (values ${profiles.map(() => '(?, ?, ?)').join(', ')}) as v(external_id, email, props)
     where u.app_id = ?::uuid and u.external_id = v.external_id`,
    [...profiles.flatMap((p) => [p.externalId, p.email, JSON.stringify(p.properties)]), appId],
  );
}

// Transactions are opened with inTransaction from handle.ts; still exported here for the callers
// that import it from this module (website/website.ts).
export { inTransaction } from './handle.js';

/** Creates the user unless its external id exists already; returns the user with that external id. */
export async function insertUserIfAbsent(
  db: Knex,
  appId: string,
  user: { id: string; externalId: string; createdVia: string; at: Date; origin?: Record<string, unknown> },
): Promise<UserRow> {
  await db('users')
    .insert({
      id: user.id,
      app_id: appId,
      external_id: user.externalId,
      created_at: user.at,
      updated_at: user.at,
      created_via: user.createdVia,
      ...(user.origin ? { origin: JSON.stringify(user.origin) } : {}),
    })
    .onConflict(['app_id', 'external_id'])
    .ignore();
  return (await findUserByExternalId(db, appId, user.externalId))!;
}

/** The user with this external id, locked until the transaction ends. */
export const lockUserByExternalId = (trx: Knex.Transaction, appId: string, externalId: string) =>
  trx<UserRow>('users').where({ app_id: appId, external_id: externalId }).forUpdate().first();

/** The user with this internal id, as committed now and locked like `lockUserByIdentifier`. */
export const lockUserById = (trx: Knex.Transaction, appId: string, id: string) =>
  trx<UserRow>('users').where({ app_id: appId, id }).forNoKeyUpdate().first();

/**
 * The user an identifier names (external id, else alias), as committed now and locked against
 * other writes of its row until the transaction ends (FOR NO KEY UPDATE: event writes, which
 * only key-share lock users, are not held up).
 */
export async function lockUserByIdentifier(
  trx: Knex.Transaction,
  appId: string,
  identifier: string,
): Promise<UserRow | undefined> {
  const direct = await trx<UserRow>('users').where({ app_id: appId, external_id: identifier }).forNoKeyUpdate().first();
  if (direct) return direct;
  const alias = await findAlias(trx, appId, identifier);
  if (!alias) return undefined;
  return trx<UserRow>('users').where({ app_id: appId, id: alias.user_id }).forNoKeyUpdate().first();
}

/** Records that the REST users API wrote the user (kept at its first time). */
export async function markApiWritten(db: Db, appId: string, userId: string, at: Date): Promise<void> {
  await db('users')
    .where({ app_id: appId, id: userId })
    .update({ api_written_at: db.raw('coalesce(users.api_written_at, ?::timestamptz)', [at]) });
}

/** Makes `aliasId` an identifier of the user, unless it already names someone. */
export async function addAliasIfAbsent(db: Knex, appId: string, aliasId: string, userId: string, at: Date) {
  await db('user_aliases')
    .insert({ app_id: appId, alias_id: aliasId, user_id: userId, created_at: at })
    .onConflict(['app_id', 'alias_id'])
    .ignore();
}

/** Gives the user a new external id (and origin); its history stays attached to its internal id. */
export async function renameUser(
  db: Knex,
  appId: string,
  userId: string,
  change: { externalId: string; createdVia: string; at: Date },
): Promise<UserRow> {
  const [renamed] = await db('users')
    .where({ app_id: appId, id: userId })
    .update({ external_id: change.externalId, updated_at: change.at, created_via: change.createdVia })
    .returning('*');
  return renamed as UserRow;
}

/**
 * A change to a user's profile: `set` keys are merged into the stored properties, `remove` keys
 * deleted from them; email, phone and origin replace the stored values when present.
 */
export interface ProfileChange {
  set: Record<string, unknown>;
  remove: string[];
  email?: string | null;
  phone?: string | null;
  origin?: Record<string, unknown> | null;
  updatedAt: Date;
  /** The REST users API writes it: recorded in `api_written_at` (docs/website.md). */
  byApi?: boolean;
}

/** The column values a profile change writes (properties merged in SQL, so concurrent merges compose). */
function profileColumns(db: Db, change: ProfileChange): Record<string, unknown> {
  const columns: Record<string, unknown> = {
    properties: db.raw(`(coalesce(users.properties, '{}'::jsonb) || ?::jsonb) - ?::text[]`, [
      JSON.stringify(change.set),
      change.remove,
    ]),
    updated_at: change.updatedAt,
  };
  if (change.email !== undefined) columns.email = change.email;
  if (change.phone !== undefined) columns.phone = change.phone;
  if (change.origin !== undefined) columns.origin = change.origin === null ? null : JSON.stringify(change.origin);
  if (change.byApi) {
    columns.api_written_at = db.raw('coalesce(users.api_written_at, ?::timestamptz)', [change.updatedAt]);
  }
  return columns;
}

/** Applies a profile change to an existing user; returns the user as changed (undefined if it is gone). */
export async function updateUserProfile(
  db: Db,
  appId: string,
  userId: string,
  change: ProfileChange,
): Promise<UserRow | undefined> {
  const [user] = await db('users')
    .where({ app_id: appId, id: userId })
    .update(profileColumns(db, change))
    .returning<UserRow[]>('*');
  return user;
}

export interface NewUser {
  id: string;
  externalId: string;
  createdVia: UserRow['created_via'];
}

/**
 * Inserts a user with the change's profile; when a concurrent request created the same external
 * id first, applies the change to that user instead. Returns the user and whether it was created.
 */
export async function insertUserOrApplyProfile(
  db: Db,
  appId: string,
  user: NewUser,
  change: ProfileChange,
): Promise<{ user: UserRow; created: boolean }> {
  const rows = await db('users')
    .insert({
      id: user.id,
      app_id: appId,
      external_id: user.externalId,
      email: change.email ?? null,
      phone: change.phone ?? null,
      properties: JSON.stringify(change.set),
      origin: change.origin == null ? null : JSON.stringify(change.origin),
      created_at: change.updatedAt,
      updated_at: change.updatedAt,
      created_via: user.createdVia,
      api_written_at: change.byApi ? change.updatedAt : null,
    })
    .onConflict(['app_id', 'external_id'])
    .merge(profileColumns(db, change))
    .returning<(UserRow & { inserted: boolean })[]>(db.raw('*, (xmax = 0) as inserted'));
  const { inserted, ...row } = rows[0]!;
  return { user: row, created: inserted };
}

export async function deleteAlias(db: Db, appId: string, aliasId: string): Promise<void> {
  await db('user_aliases').where({ app_id: appId, alias_id: aliasId }).delete();
}
