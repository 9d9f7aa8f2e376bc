// POST /admin/v1/apps/{app_id}/seed-demo.
import type { Request, Response } from 'express';
import type { ServiceContext } from '../services/context.js';
import { type DemoOptions, seedDemo } from '../services/demo.js';

export function demoHandlers(ctx: ServiceContext) {
  return {
    AdminDemo_seed: async (req: Request, res: Response) => {
      const result = await seedDemo(ctx, String(req.params.app_id), (req.body ?? {}) as DemoOptions);
      res.json({ success: true, ...result });
    },
  };
}
