// Identity verification of website visitors, as Intercom and OneSignal protect the same flow:
// each app may hold up to two identity secrets (two so a site can switch to a new one before the
// old one is removed), sealed with SECRET_KEY. The site's server signs a user id with one,
// `user_hash = hex(HMAC-SHA256(secret, user_id))`, and the browser passes the hash on; Tally
// checks it in constant time against every active secret.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { getApp } from '../admin/admin.js';
import type { ServiceContext } from '../context.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { isUuid, uuidv7 } from '../ids.js';
import { openWithRing, seal } from '../secrets.js';
import { type Actor, recordAppAction } from '../storage/audit.js';
import { inTransaction } from '../storage/handle.js';
import { IdentityNotVerifiedError } from '../tracking/browser-writes.js';
import {
  deleteIdentitySecret,
  identitySecretIds,
  insertIdentitySecret,
  lockedIdentitySecretCount,
  sealedIdentitySecrets,
} from './queries/identity-secrets.js';

/** Secrets an app may hold at once: the current one and the one replacing it. */
export const MAX_IDENTITY_SECRETS = 2;
const PURPOSE = 'identity-secrets';

export interface IdentitySecretInfo {
  id: string;
  created_at: Date;
}

/** The hash a site's server computes for a user id: lower-case hex HMAC-SHA256 keyed by the secret. */
export function userHashFor(secret: string, userId: string): string {
  return createHmac('sha256', secret).update(userId, 'utf8').digest('hex');
}

const info = (r: IdentitySecretInfo): IdentitySecretInfo => ({ id: r.id, created_at: r.created_at });

export async function listIdentitySecrets(ctx: ServiceContext, appId: string): Promise<IdentitySecretInfo[]> {
  const app = await getApp(ctx, appId);
  return (await identitySecretIds(ctx.db, app.id)).map(info);
}

/** Generates a secret and returns it (the only time it is shown). 409 with two already active. */
export async function generateIdentitySecret(ctx: ServiceContext, appId: string, actor: Actor) {
  const app = await getApp(ctx, appId);
  const secretKey = ctx.config.secretKey;
  if (!secretKey) {
    throw new ValidationError(
      "Identity secrets are encrypted with the server's SECRET_KEY, which is not set. With PostgreSQL, Tally does not generate one: set SECRET_KEY (at least 16 characters, the same on every instance, kept stable) in the server's environment, restart it, and generate the secret again.",
    );
  }
  const secret = `tis_${randomBytes(32).toString('base64url')}`;
  const now = ctx.clock();
  const row = await inTransaction(ctx.db, async (tx) => {
    // One generation at a time per app, so two concurrent calls cannot both pass the count.
    if ((await lockedIdentitySecretCount(tx, app.id)) >= MAX_IDENTITY_SECRETS) {
      throw new ConflictError(
        `This app already has ${MAX_IDENTITY_SECRETS} identity secrets. Once your site signs user ids with the newer one, remove the older one (tally apps update ${app.id} --identity-secret remove-old) and generate again.`,
      );
    }
    const inserted = await insertIdentitySecret(tx, app.id, {
      id: uuidv7(now.getTime()),
      secret: seal(secretKey, app.id, { secret }, PURPOSE),
      created_at: now,
    });
    await recordAppAction(tx, {
      appId: app.id,
      action: 'identity_secret.generate',
      actor,
      at: now,
      details: { secret_id: inserted.id },
    });
    return inserted;
  });
  ctx.logger.info({ app_id: app.id, secret_id: row.id }, 'identity secret generated');
  return { secret, info: info(row), active: await listIdentitySecrets(ctx, app.id) };
}

/** Removes one secret at once; hashes made with it are refused from then on. */
export async function removeIdentitySecret(ctx: ServiceContext, appId: string, secretId: string, actor: Actor) {
  const app = await getApp(ctx, appId);
  const removed = isUuid(secretId)
    ? await inTransaction(ctx.db, async (tx) => {
        const n = await deleteIdentitySecret(tx, app.id, secretId);
        if (n > 0) {
          await recordAppAction(tx, {
            appId: app.id,
            action: 'identity_secret.remove',
            actor,
            at: ctx.clock(),
            details: { secret_id: secretId },
          });
        }
        return n;
      })
    : 0;
  if (removed === 0) throw new NotFoundError(`The app ${app.id} has no identity secret with id ${secretId}.`);
  ctx.logger.info({ app_id: app.id, secret_id: secretId }, 'identity secret removed');
  return { id: secretId, active: await listIdentitySecrets(ctx, app.id) };
}

/**
 * Whether `userHash` is the hash of `userId` under one of the app's active secrets. Every secret
 * is compared, each in constant time; a hash that is not 64 hex digits never matches.
 */
export async function verifyUserHash(
  ctx: ServiceContext,
  appId: string,
  userId: string,
  userHash: string,
): Promise<boolean> {
  const given = /^[0-9a-f]{64}$/i.test(userHash) ? Buffer.from(userHash, 'hex') : null;
  const rows = await sealedIdentitySecrets(ctx.db, appId);
  let matched = false;
  for (const row of rows) {
    let secret: string | undefined;
    try {
      secret = openWithRing(ctx.config, appId, row.secret, PURPOSE).value.secret;
    } catch (err) {
      ctx.logger.error(
        { app_id: appId, secret_id: row.id, err: (err as Error).message },
        'identity secret unreadable: SECRET_KEY is unset or changed; generate a new secret',
      );
      continue;
    }
    if (!secret) continue;
    const expected = Buffer.from(userHashFor(secret, userId), 'hex');
    // No early exit: the time taken does not depend on which secret (if any) matched.
    if (given && timingSafeEqual(expected, given)) matched = true;
  }
  return matched;
}

/**
 * Checks a `user_hash` sent by a browser: null when none was sent, true when it is valid, and
 * 403 IDENTITY_NOT_VERIFIED when it is wrong.
 */
export async function checkUserHash(
  ctx: ServiceContext,
  appId: string,
  userId: string,
  userHash: string | undefined,
): Promise<boolean | null> {
  if (userHash === undefined) return null;
  if (await verifyUserHash(ctx, appId, userId, userHash)) return true;
  throw new IdentityNotVerifiedError(
    `The user_hash does not match "${userId}" under any of this app's identity secrets. Compute it on your server as the hex HMAC-SHA256 of the user id with a current identity secret.`,
  );
}
