// User profiles: upsert with property merge, aliases, and renames of the external id. A user's
// events reference its internal id, so a rename is one row update and history follows it.
import type { AliasCreate, UserUpsert } from '@tally/client';
import type { ServiceContext } from '../context.js';
import { ConflictError, type FieldError, NotFoundError, refuseIfAny, ValidationError } from '../errors.js';
import { isUuid, uuidv7 } from '../ids.js';
import { type Db, inTransaction, isUniqueViolation } from '../storage/handle.js';
import {
  addAliasIfAbsent,
  deleteAlias,
  findAlias,
  findUserByExternalId,
  findUserById,
  findUserByIdentifier,
  insertUserOrApplyProfile,
  markApiWritten,
  type ProfileChange,
  renameUser,
  type UserRow,
  updateUserProfile,
} from '../storage/users.js';
import { checkIdentifier, checkProperties } from './limits.js';

export type UserInput = UserUpsert;

/** Splits a properties patch into keys to set and keys to remove (those set to null). */
function propertiesPatch(properties: Record<string, unknown> | undefined) {
  const set: Record<string, unknown> = {};
  const remove: string[] = [];
  for (const [k, v] of Object.entries(properties ?? {})) {
    if (v === null) remove.push(k);
    else set[k] = v;
  }
  return { set, remove };
}

/**
 * Creates or updates a user through the REST API (`POST /v1/users`). The write is recorded on the
 * user (`api_written_at`): from then on it is the backend's user, and a browser needs its
 * user_hash to reach it, even when the website created it (docs/website.md).
 */
export async function upsertUser(
  ctx: ServiceContext,
  appId: string,
  input: UserInput,
): Promise<{ user: UserRow; created: boolean }> {
  const errors: FieldError[] = [];
  checkIdentifier(input.user_id, '/body/user_id', errors);
  checkProperties(input.properties, '/body/properties', errors);
  refuseIfAny(errors, 'user');
  const { set, remove } = propertiesPatch(input.properties);
  return inTransaction(ctx.db, async (tx) => {
    const existing = await findUserByIdentifier(tx, appId, input.user_id);
    const change: ProfileChange = { set, remove, updatedAt: ctx.clock(), byApi: true };
    if (input.email !== undefined) change.email = input.email;
    if (input.phone !== undefined) change.phone = input.phone;
    if (input.origin !== undefined) change.origin = input.origin;
    if (existing) {
      const user = await updateUserProfile(tx, appId, existing.id, change);
      return { user: user!, created: false };
    }
    const id = uuidv7(change.updatedAt.getTime());
    return insertUserOrApplyProfile(tx, appId, { id, externalId: input.user_id, createdVia: 'api' }, change);
  });
}

export type AliasInput = AliasCreate;

/** Gives a user another identifier (REST); like every REST users write, it closes the user to browsers without a hash. */
export async function createAlias(ctx: ServiceContext, appId: string, input: AliasInput) {
  const errors: FieldError[] = [];
  if (input.user_id === undefined && input.primary_user_id === undefined) {
    errors.push({ path: '/body/user_id', message: 'is required (or send primary_user_id with the internal id)' });
  }
  checkIdentifier(input.alias_id, '/body/alias_id', errors);
  refuseIfAny(errors, 'alias');
  return inTransaction(ctx.db, async (tx) => {
    const user = await findTarget(tx, appId, input);
    const owner = await findUserByExternalId(tx, appId, input.alias_id);
    if (owner && owner.id !== user.id) {
      throw new ConflictError(`"${input.alias_id}" is already the user id of another user.`);
    }
    if (owner)
      throw new ValidationError(
        `"${input.alias_id}" is already this user's own id; an alias must be a different identifier.`,
        [{ path: '/body/alias_id', message: "is the user's own id" }],
      );
    await addAliasIfAbsent(tx, appId, input.alias_id, user.id, ctx.clock());
    const alias = await findAlias(tx, appId, input.alias_id);
    if (alias!.user_id !== user.id) throw new ConflictError(`"${input.alias_id}" is already an alias of another user.`);
    await markApiWritten(tx, appId, user.id, ctx.clock());
    return { user, aliasId: input.alias_id };
  });
}

async function findTarget(db: Db, appId: string, input: AliasInput): Promise<UserRow> {
  if (input.user_id !== undefined) {
    const user = await findUserByIdentifier(db, appId, input.user_id);
    if (!user) throw new NotFoundError(`No user with id "${input.user_id}" in this app.`);
    return user;
  }
  const id = input.primary_user_id!;
  const user = isUuid(id) ? await findUserById(db, appId, id) : undefined;
  if (!user) throw new NotFoundError(`No user with internal id "${id}" in this app.`);
  return user;
}

/** Renames a user's external id (REST); the user's history follows, and it is closed to browsers without a hash. */
export async function replaceUserId(ctx: ServiceContext, appId: string, currentId: string, newId: string) {
  const errors: FieldError[] = [];
  checkIdentifier(newId, '/body/new_user_id', errors);
  refuseIfAny(errors, 'rename');
  try {
    return await inTransaction(ctx.db, async (tx) => {
      const user = await findUserByExternalId(tx, appId, currentId);
      if (!user) throw new NotFoundError(`No user with id "${currentId}" in this app.`);
      if (newId === currentId) return user;
      const taken = await findUserByExternalId(tx, appId, newId);
      if (taken) throw new ConflictError(`The user id "${newId}" already belongs to another user.`);
      const alias = await findAlias(tx, appId, newId);
      if (alias && alias.user_id !== user.id)
        throw new ConflictError(`"${newId}" is already an alias of another user.`);
      // The user's own alias may become its id: it is then no longer needed as an alias.
      if (alias) await deleteAlias(tx, appId, newId);
      await markApiWritten(tx, appId, user.id, ctx.clock());
      return renameUser(tx, appId, user.id, { externalId: newId, createdVia: user.created_via, at: ctx.clock() });
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw new ConflictError(`The user id "${newId}" already belongs to another user.`);
    throw err;
  }
}
