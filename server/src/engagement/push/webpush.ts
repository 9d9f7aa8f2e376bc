// Web Push adapter (RFC 8030/8291/8292): one encrypted message to each browser subscription the
// user registered through the SDK, signed with the app's VAPID keys.
//
// `web-push` builds each request (VAPID JWT, aes128gcm encryption); we send it ourselves rather
// than with its sendNotification: the endpoint came from a browser, so it is checked again before
// each send (endpoint-guard.ts) and the connection goes to the checked address (pinned-request.ts).
// Outbound request, per subscription:
//   POST <subscription endpoint>
//   Authorization: vapid t=<ES256 JWT {aud: endpoint origin, exp, sub: vapid_subject}>, k=<VAPID public key>
//   Content-Encoding: aes128gcm, Content-Type: application/octet-stream, TTL: 86400, Urgency: normal
//   body: aes128gcm of JSON { "title", "body", "url" (tracked click link or null), "delivery_id" }
// Answer: 201 Created (accepted for delivery; `Location` names the message); other 2xx: sent;
// 404/410: the subscription is gone and is removed; anything else: failure. The push service's
// reply is never passed on: only its status and our reason.
import webPush, { type RequestDetails } from 'web-push';
import type { PushEndpointAllowlist } from '../../config.js';
import { EndpointRefusedError, type HostResolver, resolvePushEndpoint } from './endpoint-guard.js';
import { pinnedRequest } from './pinned-request.js';
import { isSuccess, ProviderError, type PushMessage, type PushProvider, type PushResult } from './provider.js';

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
  /** Endpoints exempt from the https and public-address rules. */
  allowlist: PushEndpointAllowlist;
  /** How endpoint hosts are resolved (the system resolver unless a test passes a stub). */
  resolver?: HostResolver;
}

export const generateVapidKeys = () => webPush.generateVAPIDKeys();

export class WebPushProvider implements PushProvider {
  readonly kind = 'webpush' as const;
  /** RFC 8030 has no idempotency key: a send whose answer was lost is never repeated. */
  readonly idempotent = false;

  constructor(private readonly options: WebPushOptions) {}

  async send(m: PushMessage): Promise<PushResult> {
    const subscriptions = await this.options.subscriptions(m.app.id, m.user.id);
    if (subscriptions.length === 0) {
      const err = new ProviderError(
        this.kind,
        null,
        'The user has no Web Push subscription: their browser must subscribe through the SDK first.',
      );
      err.kind = 'no_device';
      throw err;
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
      const err = new ProviderError(this.kind, first.status, reason);
      if (gone.length === subscriptions.length) err.kind = 'subscription_gone';
      throw err;
    }
    return {
      providerMessageId: accepted.find((o) => o.location)?.location ?? null,
      recipients: accepted.length,
      delivered: accepted.some((o) => o.status === 201),
    };
  }

  private async sendOne(s: WebPushSubscription, payload: string) {
    let target: Awaited<ReturnType<typeof resolvePushEndpoint>>;
    try {
      target = await resolvePushEndpoint(s.endpoint, this.options.allowlist, this.options.resolver);
    } catch (err) {
      if (!(err instanceof EndpointRefusedError)) throw err;
      return {
        ok: false,
        gone: false,
        status: null,
        reason: `The subscription's endpoint is refused: ${err.reason}.`,
        location: null,
      };
    }
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
        reason: `The subscription's keys could not be used: ${(err as Error).message}`,
        location: null,
      };
    }
    const headers = Object.fromEntries(
      Object.entries(details.headers)
        .filter(([k]) => k.toLowerCase() !== 'content-length')
        .map(([k, v]) => [k, String(v)]),
    );
    try {
      const answer = await pinnedRequest(this.kind, target, {
        method: 'POST',
        headers,
        body: details.body ? new Uint8Array(details.body) : undefined,
      });
      const ok = isSuccess(answer.status);
      const gone = answer.status === 404 || answer.status === 410;
      return {
        ok,
        gone,
        status: answer.status,
        reason: ok ? '' : webPushRefusal(answer.status, gone),
        location: answer.headers.get('location'),
      };
    } catch (err) {
      const e = err as ProviderError;
      return { ok: false, gone: false, status: e.status ?? null, reason: e.reason ?? String(err), location: null };
    }
  }
}

/** Our reason for a push service's refusal (its reply body is never passed on). */
function webPushRefusal(status: number, gone: boolean): string {
  if (gone)
    return `The push service answered ${status}: the subscription has expired or was removed, so Tally forgot it.`;
  if (status === 401 || status === 403) return `The push service answered ${status}: it refused the VAPID signature.`;
  if (status === 413) return 'The push service answered 413: the notification is too large.';
  if (status === 429) return 'The push service answered 429: it is rate limiting; try again later.';
  if (status >= 500) return `The push service answered ${status}: it failed on its side; try again later.`;
  return `The push service answered ${status} and did not accept the notification.`;
}
