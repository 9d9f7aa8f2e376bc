// Builds the adapter for an app's stored provider configuration (secrets already opened).
import type { PushEndpointAllowlist } from '../../config.js';
import type { Db } from '../../storage/handle.js';
import type { HostResolver } from './endpoint-guard.js';
import { OneSignalProvider } from './onesignal.js';
import type { PushProvider } from './provider.js';
import { deleteSubscriptions, type PushProviderRow, subscriptionsOf } from './queries/push.js';
import { WebhookProvider } from './webhook.js';
import { WebPushProvider } from './webpush.js';
import { WonderPushProvider } from './wonderpush.js';

/** An app's stored provider row and the adapter built from it. */
export interface PreparedProvider {
  row: PushProviderRow;
  provider: PushProvider;
}

export function providerFor(
  row: PushProviderRow,
  secrets: Record<string, string>,
  deps: { db: Db; clock: () => Date; allowlist: PushEndpointAllowlist; resolver?: HostResolver },
): PushProvider {
  const s = row.settings;
  switch (row.provider) {
    case 'wonderpush':
      return new WonderPushProvider({ accessToken: secrets.access_token!, baseUrl: s.base_url });
    case 'onesignal':
      return new OneSignalProvider({
        appId: s.onesignal_app_id!,
        restApiKey: secrets.rest_api_key!,
        baseUrl: s.base_url,
      });
    case 'webhook':
      return new WebhookProvider({ url: s.webhook_url!, secret: secrets.webhook_secret!, now: deps.clock });
    case 'webpush':
      return new WebPushProvider({
        subject: s.vapid_subject!,
        publicKey: s.vapid_public_key!,
        privateKey: secrets.vapid_private_key!,
        subscriptions: (appId, userId) => subscriptionsOf(deps.db, appId, userId, deps.clock()),
        forget: (appId, ids) => deleteSubscriptions(deps.db, appId, ids),
        allowlist: deps.allowlist,
        resolver: deps.resolver,
      });
  }
}
