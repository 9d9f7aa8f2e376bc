// Rotation of the installation's secrets: the admin token (a new token, the previous ones valid
// for an overlap or until retired) and SECRET_KEY (every stored secret sealed again under the
// current key). Each rotation is recorded in the installation's audit trail, never its secrets.
import type { ServiceContext } from '../context.js';
import { ConflictError } from '../errors.js';
import { type AdminTokenRow, endOtherAdminTokens, validAdminTokens } from '../storage/admin-tokens.js';
import { type Actor, recordInstallationAction } from '../storage/audit.js';
import { inTransaction } from '../storage/handle.js';
import { resealAll } from '../storage/sealed-values.js';
import { issueAdminToken } from './keys.js';

/** How long the previous admin tokens stay valid after a rotation, unless the call says otherwise. */
export const DEFAULT_ADMIN_TOKEN_OVERLAP_SECONDS = 86_400;

function refuseWithEnvironmentToken(ctx: ServiceContext): void {
  if (ctx.config.adminToken) {
    throw new ConflictError(
      "This server's admin token comes from the ADMIN_TOKEN variable, so it is rotated there: set ADMIN_TOKEN to a new token and ADMIN_TOKEN_PREVIOUS to the current one, restart every instance, and remove ADMIN_TOKEN_PREVIOUS once every client uses the new token (docs/rotation.md).",
    );
  }
}

export interface RotatedAdminToken {
  token: string;
  row: AdminTokenRow;
  previousEndAt: Date | null;
  active: AdminTokenRow[];
}

/** Issues a new admin token; every other one stays valid for `overlapSeconds` more. */
export async function rotateAdminToken(
  ctx: ServiceContext,
  actor: Actor,
  input: { overlap_seconds?: number; label?: string },
): Promise<RotatedAdminToken> {
  refuseWithEnvironmentToken(ctx);
  const now = ctx.clock();
  const overlap = input.overlap_seconds ?? DEFAULT_ADMIN_TOKEN_OVERLAP_SECONDS;
  const endsAt = new Date(now.getTime() + overlap * 1000);
  const label = input.label?.trim() || `rotated ${now.toISOString().slice(0, 10)}`;
  const result = await inTransaction(ctx.db, async (tx) => {
    const { token, row } = await issueAdminToken(tx, now, label);
    const ended = await endOtherAdminTokens(tx, row.id, now, endsAt);
    await recordInstallationAction(tx, {
      action: 'admin_token.rotate',
      actor,
      at: now,
      details: {
        token_id: row.id,
        label,
        overlap_seconds: overlap,
        previous_tokens_end_at: ended.length > 0 ? endsAt.toISOString() : null,
        previous_token_ids: ended,
      },
    });
    return { token, row, previousEndAt: ended.length > 0 ? endsAt : null };
  });
  ctx.logger.info({ token_id: result.row.id, overlap_seconds: overlap }, 'admin token rotated');
  return { ...result, active: await validAdminTokens(ctx.db, now) };
}

/** Ends every admin token but the newest at once. */
export async function retirePreviousAdminTokens(ctx: ServiceContext, actor: Actor) {
  refuseWithEnvironmentToken(ctx);
  const now = ctx.clock();
  const retired = await inTransaction(ctx.db, async (tx) => {
    const [newest] = await validAdminTokens(tx, now);
    if (!newest) return [];
    const ended = await endOtherAdminTokens(tx, newest.id, now, now);
    await recordInstallationAction(tx, {
      action: 'admin_token.retire',
      actor,
      at: now,
      details: { kept_token_id: newest.id, retired_token_ids: ended },
    });
    return ended;
  });
  ctx.logger.info({ retired: retired.length }, 'previous admin tokens retired');
  return { retired: retired.length, active: await validAdminTokens(ctx.db, ctx.clock()) };
}

/**
 * Seals every stored secret again under the current SECRET_KEY (opening with previous keys where
 * needed) and records the counts; `actor` is null when the server runs it at start.
 */
export async function resealSecrets(ctx: ServiceContext, actor: Actor | null) {
  const counts = await resealAll(ctx.db, ctx.config);
  const previousKeys = ctx.config.previousSecretKeys.length;
  const changed = counts.push_providers.resealed + counts.identity_secrets.resealed;
  // A pass at start that changed nothing (the usual case on a restart) is not worth an entry.
  if (actor || changed > 0) {
    await recordInstallationAction(ctx.db, {
      action: 'secret_key.reseal',
      actor: actor ?? { kind: 'admin', id: 'server-start', label: 'the server at start' },
      at: ctx.clock(),
      details: { ...counts, previous_keys: previousKeys },
    });
  }
  const unreadable = counts.push_providers.unreadable + counts.identity_secrets.unreadable;
  ctx.logger[unreadable > 0 ? 'warn' : 'info'](
    { ...counts, previous_keys: previousKeys },
    'stored secrets sealed again',
  );
  return { ...counts, previous_keys: previousKeys };
}
