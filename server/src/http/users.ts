// POST /v1/users, /v1/users/aliases and /v1/users/replace-id.
import type { Request, Response } from 'express';
import type { ServiceContext } from '../services/context.js';
import { type AliasInput, createAlias, replaceUserId, type UserInput, upsertUser } from '../services/users.js';
import { requestApp } from './access.js';

export function userHandlers(ctx: ServiceContext) {
  return {
    Users_upsert: async (req: Request, res: Response) => {
      const { user, created } = await upsertUser(ctx, requestApp(req).id, req.body as UserInput);
      res.json({
        success: true,
        user_id: user.id,
        external_id: user.external_id,
        message: created ? 'User created.' : 'User updated.',
      });
    },
    Users_createAlias: async (req: Request, res: Response) => {
      const { user, aliasId } = await createAlias(ctx, requestApp(req).id, req.body as AliasInput);
      res.json({
        success: true,
        alias_id: aliasId,
        user_id: user.external_id,
        message: `"${aliasId}" now identifies the user "${user.external_id}".`,
      });
    },
    Users_replaceId: async (req: Request, res: Response) => {
      const { user_id, new_user_id } = req.body as { user_id: string; new_user_id: string };
      const user = await replaceUserId(ctx, requestApp(req).id, user_id, new_user_id);
      res.json({
        success: true,
        user_id: user.external_id,
        message: `The user "${user_id}" is now "${user.external_id}"; its history moved with it.`,
      });
    },
  };
}
