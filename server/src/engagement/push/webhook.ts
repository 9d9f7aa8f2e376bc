// Webhook adapter: an HMAC-signed JSON POST to the operator's own URL, which delivers it.
//
// Outbound request:
//   POST <webhook_url>
//   Content-Type: application/json
//   X-Tally-Timestamp: <unix seconds, also `timestamp` in the body, so it is signed>
//   X-Tally-Signature: sha256=<hex HMAC-SHA256 of the raw body with the webhook secret>
//   X-Tally-Delivery-Id: <deliveryId>
//   Idempotency-Key: <deliveryId>   (the same on a retry or a resend after a crash: the receiver
//                                    must deliver a key it has seen before only once)
//   { "delivery_id", "app_id", "user_id" (external id), "title", "message",
//     "action_url" (tracked click link or null), "timestamp" }
// Answer: any 2xx is acceptance; an optional JSON `{ "id": "...", "recipients": n }` is recorded.
import { createHmac } from 'node:crypto';
import { isSuccess, type PushMessage, type PushProvider, type PushResult, refusal, request } from './provider.js';

export function webhookSignature(secret: string, rawBody: string): string {
  return `sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`;
}

export class WebhookProvider implements PushProvider {
  readonly kind = 'webhook' as const;
  readonly idempotent = true;

  constructor(private readonly options: { url: string; secret: string; now: () => Date }) {}

  async send(m: PushMessage): Promise<PushResult> {
    const timestamp = Math.floor(this.options.now().getTime() / 1000);
    const raw = JSON.stringify({
      delivery_id: m.deliveryId,
      app_id: m.app.id,
      user_id: m.user.external_id,
      title: m.title,
      message: m.message,
      action_url: m.actionUrl ?? null,
      timestamp,
    });
    const answer = await request(
      this.kind,
      this.options.url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-tally-timestamp': String(timestamp),
          'x-tally-signature': webhookSignature(this.options.secret, raw),
          'x-tally-delivery-id': m.deliveryId,
          'idempotency-key': m.idempotencyKey,
        },
        body: raw,
      },
      [this.options.secret],
    );
    if (!isSuccess(answer.status)) throw refusal(this.kind, answer, [this.options.secret]);
    const body = (answer.json ?? {}) as Record<string, unknown>;
    return {
      providerMessageId: typeof body.id === 'string' && body.id ? body.id : null,
      recipients: typeof body.recipients === 'number' && body.recipients >= 0 ? Math.floor(body.recipients) : 1,
      delivered: true,
    };
  }
}
