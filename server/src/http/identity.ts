// Admin operations on an app's identity secrets (/admin/v1/apps/{app_id}/identity-secrets).
import type { Request, Response } from 'express';
import type { ServiceContext } from '../services/context.js';
import {
  generateIdentitySecret,
  type IdentitySecretInfo,
  listIdentitySecrets,
  removeIdentitySecret,
} from '../services/identity.js';

const param = (req: Request, name: string) =>
  String((req as Request & { openapi?: { pathParams?: Record<string, string> } }).openapi?.pathParams?.[name]);

const view = (s: IdentitySecretInfo) => ({ secret_id: s.id, created_at: s.created_at.toISOString() });

export function identityHandlers(ctx: ServiceContext) {
  return {
    AdminIdentitySecrets_generate: async (req: Request, res: Response) => {
      const created = await generateIdentitySecret(ctx, param(req, 'app_id'));
      res.setHeader('Cache-Control', 'no-store');
      res.json({ success: true, secret: created.secret, ...view(created.info), active: created.active.map(view) });
    },
    AdminIdentitySecrets_list: async (req: Request, res: Response) =>
      res.json({ success: true, items: (await listIdentitySecrets(ctx, param(req, 'app_id'))).map(view) }),
    AdminIdentitySecrets_remove: async (req: Request, res: Response) => {
      const removed = await removeIdentitySecret(ctx, param(req, 'app_id'), param(req, 'secret_id'));
      res.json({ success: true, secret_id: removed.id, removed: true, active: removed.active.map(view) });
    },
  };
}
