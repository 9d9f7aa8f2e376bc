// POST /v1/users, /v1/users/aliases and /v1/users/replace-id.
import type { ServiceContext } from '../context.js';
import { createAlias, replaceUserId, upsertUser } from '../tracking/users.js';
import { requireApp } from './context.js';
import type { Handlers } from './operations.js';

export function userHandlers(ctx: ServiceContext): Handlers<'Users_upsert' | 'Users_createAlias' | 'Users_replaceId'> {
  return {
    Users_upsert: async ({ body }, request) => {
      const { user, created } = await upsertUser(ctx, requireApp(request).id, body);
      return {
        success: true,
        user_id: user.id,
        external_id: user.external_id,
        message: created ? 'User created.' : 'User updated.',
      };
    },
    Users_createAlias: async ({ body }, request) => {
      const { user, aliasId } = await createAlias(ctx, requireApp(request).id, body);
      return {
        success: true,
        alias_id: aliasId,
        user_id: user.external_id,
        message: `"${aliasId}" now identifies the user "${user.external_id}".`,
      };
    },
    Users_replaceId: async ({ body }, request) => {
      const user = await replaceUserId(ctx, requireApp(request).id, body.user_id, body.new_user_id);
      return {
        success: true,
        user_id: user.external_id,
        message: `The user "${body.user_id}" is now "${user.external_id}"; its history moved with it.`,
      };
    },
  };
}
