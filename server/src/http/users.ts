// POST /v1/users, /v1/users/aliases and /v1/users/replace-id.
import type { ServiceContext } from '../context.js';
import { createAlias, replaceUserId, upsertUser } from '../tracking/users.js';
import { aliasCreatedView, idReplacedView, userUpsertedView } from '../tracking/views.js';
import { requireApp } from './context.js';
import type { Handlers } from './operations.js';

export function userHandlers(ctx: ServiceContext): Handlers<'Users_upsert' | 'Users_createAlias' | 'Users_replaceId'> {
  return {
    Users_upsert: async ({ body }, request) => userUpsertedView(await upsertUser(ctx, requireApp(request).id, body)),
    Users_createAlias: async ({ body }, request) =>
      aliasCreatedView(await createAlias(ctx, requireApp(request).id, body)),
    Users_replaceId: async ({ body }, request) => {
      const user = await replaceUserId(ctx, requireApp(request).id, body.user_id, body.new_user_id);
      return idReplacedView(user, body.user_id);
    },
  };
}
