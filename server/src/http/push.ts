// POST /v1/sendpush, the tracked click link GET /v1/r/{deliveryId}, and the admin push provider
// operations (PUT/GET /admin/v1/apps/{app_id}/push-provider).
import type { ServiceContext } from '../context.js';
import { configureProvider, getProvider, type ProviderView, recordClick, sendPush } from '../engagement/push/send.js';
import { requireApp } from './context.js';
import { type Handlers, reply } from './operations.js';

const providerView = (v: ProviderView) => ({
  success: true as const,
  ...v,
  configured_at: v.configured_at.toISOString(),
});

export function pushHandlers(
  ctx: ServiceContext,
): Handlers<'Push_send' | 'Push_click' | 'AdminPush_configure' | 'AdminPush_get'> {
  return {
    Push_send: async ({ body }, request) => {
      // Click links point at PUBLIC_BASE_URL, else at the address this request came to.
      const linkBase = ctx.config.publicBaseUrl ?? request.origin;
      const { delivery, generatedMessage, retrying } = await sendPush(ctx, requireApp(request), body, linkBase);
      return {
        success: true,
        message: retrying
          ? `The ${retrying.provider} push provider could not take the notification yet (${retrying.status === null ? 'no answer' : `HTTP ${retrying.status}`}), so Tally is retrying it in the background. GET /v1/notifications/campaigns/${delivery.id} shows it pending until the provider takes it or the attempts end.`
          : delivery.status === 'delivered'
            ? 'Push notification accepted by the provider for delivery.'
            : 'Push notification sent to the provider.',
        deliveryId: delivery.id,
        recipientCount: delivery.recipients,
        ...(generatedMessage !== undefined ? { generatedMessage } : {}),
      };
    },
    Push_click: async ({ path }) =>
      reply.redirect(302, await recordClick(ctx, path.deliveryId), { 'Cache-Control': 'no-store' }),
    AdminPush_configure: async ({ body, path }) => providerView(await configureProvider(ctx, path.app_id, body)),
    AdminPush_get: async ({ path }) => providerView(await getProvider(ctx, path.app_id)),
  };
}
