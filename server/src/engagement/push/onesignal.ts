// OneSignal adapter: one notification to the user's push subscriptions, targeted by external id.
//
// Outbound request (https://documentation.onesignal.com/reference/push-notification):
//   POST {base}/notifications                                   base: https://api.onesignal.com
//   Authorization: Key <REST API key>
//   Content-Type: application/json
//   { "app_id": "<OneSignal app id>",
//     "include_aliases": { "external_id": ["<external user id>"] },
//     "target_channel": "push",
//     "headings": { "en": "<title>" }, "contents": { "en": "<message>" },
//     "url": "<tracked click link>",                              (only with an action URL)
//     "data": { "tally_delivery_id": "<deliveryId>" },
//     "idempotency_key": "<deliveryId, or the batch id>" }
// OneSignal keeps an idempotency_key for 30 days: a request repeating one answers with the first
// notification and sends nothing new, so Tally retries and resends after a crash under the same key.
// Answer: 200 `{ "id": "<notification id>", ... }`. A 200 can carry `errors` with an empty id
// (for example no subscribed device for that external id): nothing was sent, so it is a refusal.
// Campaigns target up to 2,000 external ids per call; a 200 with an id may list some of them under
// `errors.invalid_aliases.external_id`: those were not sent, the others were.
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

export const ONESIGNAL_BASE_URL = 'https://api.onesignal.com';

export class OneSignalProvider implements PushProvider {
  readonly kind = 'onesignal' as const;
  readonly idempotent = true;
  readonly maxRecipientsPerCall = 2_000;

  constructor(private readonly options: { appId: string; restApiKey: string; baseUrl?: string }) {}

  async send(m: PushMessage): Promise<PushResult> {
    const answer = await this.post(
      [m.user.external_id],
      m.title,
      m.message,
      { tally_delivery_id: m.deliveryId },
      m.idempotencyKey,
      m.actionUrl,
    );
    return { providerMessageId: answer.id, recipients: answer.recipients, delivered: !answer.hasErrors };
  }

  async sendMany(b: PushBatch): Promise<BatchResult> {
    const answer = await this.post(
      b.users.map((u) => u.external_id),
      b.title,
      b.message,
      { tally_batch_id: b.batchId },
      b.batchId,
      b.actionUrl,
    );
    return { providerMessageId: answer.id, delivered: !answer.hasErrors, failedExternalIds: answer.invalid };
  }

  private async post(
    externalIds: string[],
    title: string,
    message: string,
    data: Record<string, string>,
    idempotencyKey: string,
    actionUrl?: string,
  ) {
    const { restApiKey } = this.options;
    const body: Record<string, unknown> = {
      app_id: this.options.appId,
      include_aliases: { external_id: externalIds },
      target_channel: 'push',
      headings: { en: title },
      contents: { en: message },
      data,
      idempotency_key: idempotencyKey,
    };
    if (actionUrl) body.url = actionUrl;
    const answer = await request(
      this.kind,
      joinUrl(this.options.baseUrl ?? ONESIGNAL_BASE_URL, '/notifications'),
      {
        method: 'POST',
        headers: {
          authorization: `Key ${restApiKey}`,
          'content-type': 'application/json',
          accept: 'application/json',
        },
        body: JSON.stringify(body),
      },
      [restApiKey],
    );
    if (!isSuccess(answer.status)) throw refusal(this.kind, answer, [restApiKey]);
    const result = (answer.json ?? {}) as Record<string, unknown>;
    const id = typeof result.id === 'string' ? result.id : '';
    const errors = result.errors;
    const hasErrors = Array.isArray(errors) ? errors.length > 0 : errors != null && typeof errors === 'object';
    if (!id) {
      const reason = /not subscribed/i.test(answer.text)
        ? 'OneSignal found no subscribed device for this user (it answered without a notification id), so nothing was sent.'
        : 'OneSignal answered without a notification id, so nothing was sent.';
      const err = refusal(this.kind, answer, [restApiKey], reason);
      err.kind = 'no_device';
      throw err;
    }
    const invalid = (errors as { invalid_aliases?: { external_id?: unknown } } | null)?.invalid_aliases?.external_id;
    return {
      id,
      recipients: typeof result.recipients === 'number' ? result.recipients : 1,
      hasErrors,
      invalid: Array.isArray(invalid) ? invalid.filter((x): x is string => typeof x === 'string') : [],
    };
  }
}
