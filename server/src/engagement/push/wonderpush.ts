// WonderPush adapter: one Management API delivery to the user's installations.
//
// Outbound request (https://docs.wonderpush.com/reference/post-deliveries):
//   POST {base}/v1/deliveries?accessToken=<access token>      base: https://management-api.wonderpush.com
//   Content-Type: application/json
//   { "targetUserIds": ["<external user id>"],
//     "notification": { "alert": { "title": "<title>", "text": "<message>" },
//                       "targetUrl": "<tracked click link>" } }          (targetUrl only with an action URL)
// Campaigns send one delivery to up to 1,000 users at once (`targetUserIds` takes a list).
// Answer: 2xx `{ "success": true, "notificationId": "...", ... }`; errors
// `{ "error": { "status": 4xx, "code": "...", "message": "..." } }`.
import {
  type BatchResult,
  isSuccess,
  joinUrl,
  type PushBatch,
  type PushMessage,
  type PushProvider,
  type PushResult,
  refusal,
  request,
} from './provider.js';

export const WONDERPUSH_BASE_URL = 'https://management-api.wonderpush.com';

export class WonderPushProvider implements PushProvider {
  readonly kind = 'wonderpush' as const;
  /** The deliveries API documents no idempotency key: a send whose answer was lost is never repeated. */
  readonly idempotent = false;
  readonly maxRecipientsPerCall = 1_000;

  constructor(private readonly options: { accessToken: string; baseUrl?: string }) {}

  async send(m: PushMessage): Promise<PushResult> {
    const result = await this.deliver([m.user.external_id], m.title, m.message, m.actionUrl);
    return { providerMessageId: result.providerMessageId, recipients: 1, delivered: result.delivered };
  }

  sendMany(b: PushBatch): Promise<BatchResult> {
    return this.deliver(
      b.users.map((u) => u.external_id),
      b.title,
      b.message,
      b.actionUrl,
    );
  }

  private async deliver(
    targetUserIds: string[],
    title: string,
    text: string,
    actionUrl?: string,
  ): Promise<BatchResult> {
    const { accessToken } = this.options;
    const url = `${joinUrl(this.options.baseUrl ?? WONDERPUSH_BASE_URL, '/v1/deliveries')}?accessToken=${encodeURIComponent(accessToken)}`;
    const notification: Record<string, unknown> = { alert: { title, text } };
    if (actionUrl) notification.targetUrl = actionUrl;
    const answer = await request(
      this.kind,
      url,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ targetUserIds, notification }),
      },
      [accessToken],
    );
    if (!isSuccess(answer.status)) throw refusal(this.kind, answer, [accessToken]);
    const body = (answer.json ?? {}) as Record<string, unknown>;
    const id = body.notificationId ?? body.deliveryId ?? body.campaignId ?? body.id;
    return {
      providerMessageId: typeof id === 'string' && id ? id : null,
      delivered: body.success === true,
      failedExternalIds: [],
    };
  }
}
