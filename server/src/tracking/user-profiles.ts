// A user's stored profile, found by any identifier of the user (external id or alias).

import type { ServiceContext } from '../context.js';
import { NotFoundError } from '../errors.js';
import { findUserByIdentifier, type UserRow } from '../storage/users.js';

/** The user an identifier names in the app; 404 when there is none. */
export async function userProfile(ctx: ServiceContext, appId: string, identifier: string): Promise<UserRow> {
  const user = await findUserByIdentifier(ctx.db, appId, identifier);
  if (!user) throw new NotFoundError(`No user "${identifier}" in app ${appId}.`);
  return user;
}
