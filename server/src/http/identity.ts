// Admin operations on an app's identity secrets (/admin/v1/apps/{app_id}/identity-secrets).
import type { ServiceContext } from '../context.js';
import {
  generateIdentitySecret,
  type IdentitySecretInfo,
  listIdentitySecrets,
  removeIdentitySecret,
} from '../website/identity-secrets.js';
import { type Handlers, reply } from './operations.js';

const view = (s: IdentitySecretInfo) => ({ secret_id: s.id, created_at: s.created_at.toISOString() });

export function identityHandlers(
  ctx: ServiceContext,
): Handlers<'AdminIdentitySecrets_generate' | 'AdminIdentitySecrets_list' | 'AdminIdentitySecrets_remove'> {
  return {
    AdminIdentitySecrets_generate: async ({ path }) => {
      const created = await generateIdentitySecret(ctx, path.app_id);
      // The secret is shown once: never cached anywhere on its way.
      return reply.json(
        { success: true, secret: created.secret, ...view(created.info), active: created.active.map(view) },
        { 'Cache-Control': 'no-store' },
      );
    },
    AdminIdentitySecrets_list: async ({ path }) => ({
      success: true,
      items: (await listIdentitySecrets(ctx, path.app_id)).map(view),
    }),
    AdminIdentitySecrets_remove: async ({ path }) => {
      const removed = await removeIdentitySecret(ctx, path.app_id, path.secret_id);
      return { success: true, secret_id: removed.id, removed: true, active: removed.active.map(view) };
    },
  };
}
