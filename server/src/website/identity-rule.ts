// The identity rule of the website surface, one rule for every key-less write (users, events,
// visits, identify, push subscriptions): a browser without a valid user_hash may create, change
// or add to a user only when the website created it without a hash and the REST users API never
// wrote it (`openToBrowsers`). Each operation applies it to the user row as its own transaction
// resolved it, so the REST API creating or writing the same user meanwhile cannot slip past it.

import type { ServiceContext } from '../context.js';
import { openToBrowsers, type UserRow } from '../storage/users.js';
import { notOpenToBrowsers } from '../tracking/browser-writes.js';
import { checkUserHash } from './identity-secrets.js';

/**
 * Where a user came from (`users.created_via`): the REST API (and admin, demo data), a browser
 * without proof of identity, or a browser with a valid user_hash.
 */
export type CreatedVia = 'api' | 'website' | 'website_verified';

/** How a browser request stands: whether it proved the identifier it names with a valid hash. */
export interface BrowserIdentity {
  verified: boolean;
  /** `created_via` of a user this request creates. */
  createdVia: CreatedVia;
}

/**
 * Checks the hash a browser sent for `identifier`: verified when valid, unverified when none was
 * sent, and 403 IDENTITY_NOT_VERIFIED when it is wrong.
 */
export async function browserIdentity(
  ctx: ServiceContext,
  appId: string,
  identifier: string,
  userHash: string | undefined,
): Promise<BrowserIdentity> {
  const verified = (await checkUserHash(ctx, appId, identifier, userHash)) === true;
  return { verified, createdVia: verified ? 'website_verified' : 'website' };
}

/** 403 IDENTITY_NOT_VERIFIED unless the request is verified or the user is open to browsers. */
export function requireOpen(
  identity: Pick<BrowserIdentity, 'verified'>,
  user: Pick<UserRow, 'created_via' | 'api_written_at'>,
  identifier: string,
): void {
  if (identity.verified || openToBrowsers(user)) return;
  throw notOpenToBrowsers(identifier);
}
