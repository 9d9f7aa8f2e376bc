// POST /admin/v1/apps/{app_id}/seed-demo.
import type { ServiceContext } from '../context.js';
import { seedDemo } from '../tracking/demo.js';
import { demoSeededView } from '../tracking/views.js';
import { actorOf } from './context.js';
import type { Handlers } from './operations.js';

export function demoHandlers(ctx: ServiceContext): Handlers<'AdminDemo_seed'> {
  return {
    AdminDemo_seed: async ({ body, path }, request) =>
      demoSeededView(await seedDemo(ctx, path.app_id, body ?? {}, actorOf(request))),
  };
}
