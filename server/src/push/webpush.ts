// Web Push adapter (RFC 8030/8291/8292): one encrypted message to each browser subscription the
// user registered through the SDK, signed with the app's VAPID keys.
//
// `web-push` builds each request (VAPID JWT, aes128gcm encryption); we send it with fetch rather
// than its sendNotification, which only speaks https and has no uniform timeout handling.
// Outbound request, per subscription:
//   POST <subscription endpoint>
//   Authorization: vapid t=<ES256 JWT {aud: endpoint origin, exp, sub: vapid_subject}>, k=<VAPID public key>
//   Content-Encoding: aes128gcm, Content-Type: application/octet-stream, TTL: 86400, Urgency: normal
//   body: aes128gcm of JSON { "title", "body", "url" (tracked click link or null), "delivery_id" }
// Answer: 201 Created (accepted for delivery; `Location` names the message); other 2xx: sent;
// 404/410: the subscription is gone and is removed; anything else: failure.
import webPush, { type RequestDetails } from 'web-push';
import { isSuccess, ProviderError, type PushMessage, type PushProvider, type PushResult, request } from './provider.js';

export interface WebPushSubscription {
  id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
}

export interface WebPushOptions {
  subject: string;
  publicKey: string;
  privateKey: string;
  subscriptions(appId: string, userId: string): Promise<WebPushSubscription[]>;
  forget(appId: string, ids: string[]): Promise<void>;
}

export const generateVapidKeys = () => webPush.generateVAPIDKeys();

export class WebPushProvider implements PushProvider {
  readonly kind = 'webpush' as const;

  constructor(private readonly options: WebPushOptions) {}

  async send(m: PushMessage): Promise<PushResult> {
    const subscriptions = await this.options.subscriptions(m.app.id, m.user.id);
    if (subscriptions.length === 0) {
      throw new ProviderError(
        this.kind,
        null,
        'The user has no Web Push subscription: their browser must subscribe through the SDK first.',
      );
    }
    const payload = JSON.stringify({
      title: m.title,
      body: m.message,
      url: m.actionUrl ?? null,
      delivery_id: m.deliveryId,
    });
    const outcomes = await Promise.all(subscriptions.map((s) => this.sendOne(s, payload)));
    const gone = subscriptions.filter((_, i) => outcomes[i]!.gone).map((s) => s.id);
    if (gone.length > 0) await this.options.forget(m.app.id, gone);
    const accepted = outcomes.filter((o) => o.ok);
    if (accepted.length === 0) {
      const first = outcomes[0]!;
      const reason =
        subscriptions.length === 1
          ? first.reason
          : `None of the user's ${subscriptions.length} subscriptions accepted the message; first: ${first.reason}`;
      throw new ProviderError(this.kind, first.status, reason);
    }
    return {
      providerMessageId: accepted.find((o) => o.location)?.location ?? null,
      recipients: accepted.length,
      delivered: accepted.some((o) => o.status === 201),
    };
  }

  private async sendOne(s: WebPushSubscription, payload: string) {
    let details: RequestDetails;
    try {
      details = webPush.generateRequestDetails(
        { endpoint: s.endpoint, keys: { p256dh: s.p256dh, auth: s.auth } },
        payload,
        {
          vapidDetails: {
            subject: this.options.subject,
            publicKey: this.options.publicKey,
            privateKey: this.options.privateKey,
          },
          contentEncoding: 'aes128gcm',
          TTL: 86_400,
        },
      );
    } catch (err) {
      return {
        ok: false,
        gone: false,
        status: null,
        reason: `The subscription could not be used: ${(err as Error).message}`,
        location: null,
      };
    }
    const headers = Object.fromEntries(
      Object.entries(details.headers)
        .filter(([k]) => k.toLowerCase() !== 'content-length')
        .map(([k, v]) => [k, String(v)]),
    );
    try {
      const answer = await request(this.kind, details.endpoint, {
        method: 'POST',
        headers,
        body: details.body ? new Uint8Array(details.body) : undefined,
      });
      const ok = isSuccess(answer.status);
      return {
        ok,
        gone: answer.status === 404 || answer.status === 410,
        status: answer.status,
        reason: ok
          ? ''
          : `The push service answered ${answer.status}${answer.text.trim() ? `: ${answer.text.trim().slice(0, 200)}` : ''}.`,
        location: answer.headers.get('location'),
      };
    } catch (err) {
      const e = err as ProviderError;
      return { ok: false, gone: false, status: e.status ?? null, reason: e.reason ?? String(err), location: null };
    }
  }
}
