// POST /v1/sendpush, the tracked click link GET /v1/r/{deliveryId}, and the admin push provider
// operations (PUT/GET /admin/v1/apps/{app_id}/push-provider).
import type { Request, Response } from 'express';
import type { ServiceContext } from '../services/context.js';
import {
  configureProvider,
  getProvider,
  type ProviderInput,
  type ProviderView,
  recordClick,
  type SendInput,
  sendPush,
} from '../services/push.js';
import { requestApp } from './access.js';

// Path parameters as the validator matched them (Express 5 resets req.params for path-less layers).
const param = (req: Request, name: string) =>
  String((req as Request & { openapi?: { pathParams?: Record<string, string> } }).openapi?.pathParams?.[name]);

const providerView = (v: ProviderView) => ({ success: true, ...v, configured_at: v.configured_at.toISOString() });

export function pushHandlers(ctx: ServiceContext) {
  /** Where click links point: PUBLIC_BASE_URL, else the origin this request came to. */
  const linkBase = (req: Request) => ctx.config.publicBaseUrl ?? `${req.protocol}://${req.get('host')}`;
  return {
    Push_send: async (req: Request, res: Response) => {
      const { delivery, generatedMessage } = await sendPush(ctx, requestApp(req), req.body as SendInput, linkBase(req));
      res.json({
        success: true,
        message:
          delivery.status === 'delivered'
            ? 'Push notification accepted by the provider for delivery.'
            : 'Push notification sent to the provider.',
        deliveryId: delivery.id,
        recipientCount: delivery.recipients,
        ...(generatedMessage !== undefined ? { generatedMessage } : {}),
      });
    },
    Push_click: async (req: Request, res: Response) => {
      const target = await recordClick(ctx, param(req, 'deliveryId'));
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, target);
    },
    AdminPush_configure: async (req: Request, res: Response) =>
      res.json(providerView(await configureProvider(ctx, param(req, 'app_id'), req.body as ProviderInput))),
    AdminPush_get: async (req: Request, res: Response) =>
      res.json(providerView(await getProvider(ctx, param(req, 'app_id')))),
  };
}
