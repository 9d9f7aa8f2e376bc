// How a key-less browser write is refused when it names a user it may not reach (the website's
// identity rule, website/identity-rule.ts, decides when): ingestion refuses website events with it
// too, so the refusal lives below both.
import { ForbiddenError } from '../errors.js';

/** 403 IDENTITY_NOT_VERIFIED: the browser did not prove, with a user_hash, the identity it names. */
export class IdentityNotVerifiedError extends ForbiddenError {
  constructor(message: string) {
    super('IDENTITY_NOT_VERIFIED', message);
  }
}

export const hashAdvice =
  "Compute the hash on your server (hex HMAC-SHA256 of the id with the app's identity secret) and pass it to ServiceWeb.setUserId(id, { userHash }).";

/** The refusal of a browser request naming a user that is not open to browsers. */
export function notOpenToBrowsers(identifier: string): IdentityNotVerifiedError {
  return new IdentityNotVerifiedError(
    `"${identifier}" names a user your backend created or wrote through the REST API (or one a browser identified with a hash), so a browser may only reach it with a user_hash of that id. ${hashAdvice}`,
  );
}
