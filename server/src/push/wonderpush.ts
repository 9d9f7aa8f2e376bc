// WonderPush adapter: one Management API delivery to the user's installations.
//
// Outbound request (https://docs.wonderpush.com/reference/post-deliveries):
//   POST {base}/v1/deliveries?accessToken=<access token>      base: https://management-api.wonderpush.com
//   Content-Type: application/json
//   { "targetUserIds": ["<external user id>"],
//     "notification": { "alert": { "title": "<title>", "text": "<message>" },
//                       "targetUrl": "<tracked click link>" } }          (targetUrl only with an action URL)
// Answer: 2xx `{ "success": true, "notificationId": "...", ... }`; errors
// `{ "error": { "status": 4xx, "code": "...", "message": "..." } }`.
import {
  isSuccess,
  joinUrl,
  type PushMessage,
  type PushProvider,
  type PushResult,
  refusal,
  request,
} from './provider.js';

export const WONDERPUSH_BASE_URL = 'https://management-api.wonderpush.com';

export class WonderPushProvider implements PushProvider {
  readonly kind = 'wonderpush' as const;

  constructor(private readonly options: { accessToken: string; baseUrl?: string }) {}

  async send(m: PushMessage): Promise<PushResult> {
    const { accessToken } = this.options;
    const url = `${joinUrl(this.options.baseUrl ?? WONDERPUSH_BASE_URL, '/v1/deliveries')}?accessToken=${encodeURIComponent(accessToken)}`;
    const notification: Record<string, unknown> = { alert: { title: m.title, text: m.message } };
    if (m.actionUrl) notification.targetUrl = m.actionUrl;
    const answer = await request(
      this.kind,
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ targetUserIds: [m.user.external_id], notification }),
      },
      [accessToken],
    );
    if (!isSuccess(answer.status)) throw refusal(this.kind, answer, [accessToken]);
    const body = (answer.json ?? {}) as Record<string, unknown>;
    const id = body.notificationId ?? body.deliveryId ?? body.campaignId ?? body.id;
    return {
      providerMessageId: typeof id === 'string' && id ? id : null,
      recipients: 1,
      delivered: body.success === true,
    };
  }
}
