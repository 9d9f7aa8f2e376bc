// POST /v1/sendpush, the tracked click link GET /v1/r/{deliveryId}, and the admin push provider
// operations (PUT/GET /admin/v1/apps/{app_id}/push-provider).
import type { ServiceContext } from '../context.js';
import { configureProvider, getProvider, recordClick, sendPush } from '../engagement/push/send.js';
import { pushProviderView, pushSentView } from '../engagement/views.js';
import { actorOf, requireApp } from './context.js';
import { type Handlers, reply } from './operations.js';

export function pushHandlers(
  ctx: ServiceContext,
): Handlers<'Push_send' | 'Push_click' | 'AdminPush_configure' | 'AdminPush_get'> {
  return {
    Push_send: async ({ body }, request) => {
      // Click links point at PUBLIC_BASE_URL, else at the address this request came to.
      const linkBase = ctx.config.publicBaseUrl ?? request.origin;
      return pushSentView(await sendPush(ctx, requireApp(request), body, linkBase));
    },
    Push_click: async ({ path }) =>
      reply.redirect(302, await recordClick(ctx, path.deliveryId), { 'Cache-Control': 'no-store' }),
    AdminPush_configure: async ({ body, path }, request) =>
      pushProviderView(await configureProvider(ctx, path.app_id, body, actorOf(request))),
    AdminPush_get: async ({ path }) => pushProviderView(await getProvider(ctx, path.app_id)),
  };
}
