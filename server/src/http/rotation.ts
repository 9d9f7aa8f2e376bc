// Admin operations that rotate the installation's secrets: the admin token
// (/admin/v1/admin-tokens) and SECRET_KEY (/admin/v1/secret-key/reseal).
import { resealSecrets, retirePreviousAdminTokens, rotateAdminToken } from '../admin/rotation.js';
import { adminTokenInfoView, adminTokenIssuedView } from '../admin/views.js';
import type { ServiceContext } from '../context.js';
import { actorOf } from './context.js';
import { type Handlers, reply } from './operations.js';

export function rotationHandlers(
  ctx: ServiceContext,
): Handlers<'AdminTokens_rotate' | 'AdminTokens_retirePrevious' | 'AdminSecretKey_reseal'> {
  return {
    AdminTokens_rotate: async ({ body }, request) => {
      const rotated = await rotateAdminToken(ctx, actorOf(request), body ?? {});
      // The token is shown once: never cached anywhere on its way.
      return reply.json(adminTokenIssuedView(rotated), { 'Cache-Control': 'no-store' });
    },
    AdminTokens_retirePrevious: async (_input, request) => {
      const { retired, active } = await retirePreviousAdminTokens(ctx, actorOf(request));
      return { success: true, retired, active: active.map(adminTokenInfoView) };
    },
    AdminSecretKey_reseal: async (_input, request) => ({
      success: true,
      ...(await resealSecrets(ctx, actorOf(request))),
    }),
  };
}
