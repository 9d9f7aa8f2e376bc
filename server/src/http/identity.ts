// Admin operations on an app's identity secrets (/admin/v1/apps/{app_id}/identity-secrets).
import type { ServiceContext } from '../context.js';
import { generateIdentitySecret, listIdentitySecrets, removeIdentitySecret } from '../website/identity-secrets.js';
import { identitySecretCreatedView, identitySecretListView, identitySecretRemovedView } from '../website/views.js';
import { actorOf } from './context.js';
import { type Handlers, reply } from './operations.js';

export function identityHandlers(
  ctx: ServiceContext,
): Handlers<'AdminIdentitySecrets_generate' | 'AdminIdentitySecrets_list' | 'AdminIdentitySecrets_remove'> {
  return {
    AdminIdentitySecrets_generate: async ({ path }, request) => {
      const created = await generateIdentitySecret(ctx, path.app_id, actorOf(request));
      // The secret is shown once: never cached anywhere on its way.
      return reply.json(identitySecretCreatedView(created), { 'Cache-Control': 'no-store' });
    },
    AdminIdentitySecrets_list: async ({ path }) => identitySecretListView(await listIdentitySecrets(ctx, path.app_id)),
    AdminIdentitySecrets_remove: async ({ path }, request) =>
      identitySecretRemovedView(await removeIdentitySecret(ctx, path.app_id, path.secret_id, actorOf(request))),
  };
}
