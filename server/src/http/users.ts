// POST /v1/users, /v1/users/aliases and /v1/users/replace-id, and GET /v1/users/{user_id}.
import type { ServiceContext } from '../context.js';
import { userProfile } from '../tracking/user-profiles.js';
import { createAlias, replaceUserId, upsertUser } from '../tracking/users.js';
import { aliasCreatedView, idReplacedView, userProfileResultView, userUpsertedView } from '../tracking/views.js';
import { requireApp } from './context.js';
import type { Handlers } from './operations.js';

export function userHandlers(
  ctx: ServiceContext,
): Handlers<'Users_upsert' | 'Users_createAlias' | 'Users_replaceId' | 'Users_get'> {
  return {
    Users_upsert: async ({ body }, request) => userUpsertedView(await upsertUser(ctx, requireApp(request).id, body)),
    Users_createAlias: async ({ body }, request) =>
      aliasCreatedView(await createAlias(ctx, requireApp(request).id, body)),
    Users_replaceId: async ({ body }, request) => {
      const user = await replaceUserId(ctx, requireApp(request).id, body.user_id, body.new_user_id);
      return idReplacedView(user, body.user_id);
    },
    // The key's own app only: a user of another app is not found.
    Users_get: async ({ path }, request) =>
      userProfileResultView(await userProfile(ctx, requireApp(request).id, path.user_id)),
  };
}
