// What callers see of the website surface, each body built once here and typed with the contract:
// the six operations the browser SDK calls, and an app's identity secrets (the admin API).
import type {
  IdentifyResult,
  IdentitySecretInfo as IdentitySecretBody,
  IdentitySecretCreated,
  IdentitySecretList,
  IdentitySecretRemoved,
  PushSubscriptionResult,
  VisitResult,
  WebsiteConfig,
  WebsiteEventResult,
  WebsiteUserResult,
} from '@tally/client';
import type { AppRow } from '../storage/tenancy.js';
import type { IdentitySecretInfo } from './identity-secrets.js';

export const websiteUserView = (user: { id: string; external_id: string }): WebsiteUserResult => ({
  success: true,
  user_id: user.id,
  external_id: user.external_id,
});

export const websiteConfigView = ({
  app,
  webPushPublicKey,
}: {
  app: AppRow;
  webPushPublicKey: string | null;
}): WebsiteConfig => ({
  success: true,
  app_id: app.id,
  bot_detection: {
    enabled: app.bot_detection !== 'off',
    mode: app.bot_detection,
    advanced_allowed: app.bot_detection === 'advanced' && app.advanced_attested,
  },
  push: { webpush_public_key: webPushPublicKey },
});

export const visitView = (visit: { logged: boolean; visitId: string | null; isBot: boolean | null }): VisitResult => ({
  success: true,
  logged: visit.logged,
  visit_id: visit.visitId,
  is_bot: visit.isBot,
});

export const websiteEventView = (eventId: string): WebsiteEventResult => ({ success: true, event_id: eventId });

export const identifyView = (user: { external_id: string }): IdentifyResult => ({
  success: true,
  user_id: user.external_id,
});

export const pushSubscriptionView = (subscriptionId: string): PushSubscriptionResult => ({
  success: true,
  subscription_id: subscriptionId,
});

export const identitySecretView = (s: IdentitySecretInfo): IdentitySecretBody => ({
  secret_id: s.id,
  created_at: s.created_at.toISOString(),
});

/** A new secret: shown this once, with the secrets active now. */
export const identitySecretCreatedView = (created: {
  secret: string;
  info: IdentitySecretInfo;
  active: IdentitySecretInfo[];
}): IdentitySecretCreated => ({
  success: true,
  secret: created.secret,
  ...identitySecretView(created.info),
  active: created.active.map(identitySecretView),
});

export const identitySecretListView = (secrets: IdentitySecretInfo[]): IdentitySecretList => ({
  success: true,
  items: secrets.map(identitySecretView),
});

export const identitySecretRemovedView = (removed: {
  id: string;
  active: IdentitySecretInfo[];
}): IdentitySecretRemoved => ({
  success: true,
  secret_id: removed.id,
  removed: true,
  active: removed.active.map(identitySecretView),
});
