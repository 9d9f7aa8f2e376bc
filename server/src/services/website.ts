// The website surface behind the browser SDK: users from forms, the SDK's configuration, page
// visits (classified human or bot, each also a `page_view` event), custom events, linking an
// anonymous visitor to a known user, and Web Push subscriptions. Callers have already checked
// that the request's origin may act for the app.
import type { PushSubscriptionRequest, VisitRequest, WebsiteEventRequest, WebsiteUserRequest } from '@tally/client';
import { type FieldError, ForbiddenError, refuseIfAny } from '../errors.js';
import { uuidv7 } from '../ids.js';
import { checkPushEndpoint } from '../push/endpoint-guard.js';
import type { AppRow } from '../storage/tenancy.js';
import {
  addAliasIfAbsent,
  findAlias,
  findUserByIdentifier,
  insertUserIfAbsent,
  inTransaction,
  lockUserByExternalId,
  renameUser,
} from '../storage/users.js';
import { hasAliases, mergeUserInto, moveLateEvents, upsertPushSubscription } from '../storage/website.js';
import { classifyVisit } from './bot-detection.js';
import type { ServiceContext } from './context.js';
import { checkUserHash, IdentityNotVerifiedError } from './identity.js';
import { ingest } from './ingestion.js';
import { checkIdentifier, checkProperties } from './limits.js';
import { webPushPublicKey } from './push.js';
import { upsertUser } from './users.js';

/** Who sent a website request, as seen by the server. */
export interface Caller {
  ip: string | null;
  /** The User-Agent header. */
  ua: string | null;
}

/**
 * Where a user came from (`users.created_via`): the REST API (and admin, demo data), a browser
 * without proof of identity, or a browser with a valid user_hash. Only `website` users may be
 * reached from a browser without a hash.
 */
export type CreatedVia = 'api' | 'website' | 'website_verified';

export async function upsertWebsiteUser(ctx: ServiceContext, app: AppRow, input: WebsiteUserRequest) {
  const errors: FieldError[] = [];
  if (input.externalId !== undefined) checkIdentifier(input.externalId, '/body/externalId', errors);
  refuseIfAny(errors);
  const key = input.externalId ?? input.email.trim().toLowerCase();
  const properties: Record<string, unknown> = {};
  if (input.firstName) properties.first_name = input.firstName;
  if (input.lastName) properties.last_name = input.lastName;
  const fullName = [input.firstName, input.lastName].filter(Boolean).join(' ') || input.name;
  if (fullName) properties.name = fullName;
  // origin records where the user came from first; a later form on another page keeps it.
  const existing = await findUserByIdentifier(ctx.db, app.id, key);
  const { user } = await upsertUser(
    ctx,
    app.id,
    {
      user_id: key,
      email: input.email.trim(),
      properties,
      ...(existing ? {} : { origin: { channel: 'website', website_url: input.websiteUrl } }),
    },
    'website',
  );
  return user;
}

export async function websiteConfig(ctx: ServiceContext, app: AppRow) {
  return {
    success: true as const,
    app_id: app.id,
    bot_detection: {
      enabled: app.bot_detection !== 'off',
      mode: app.bot_detection,
      advanced_allowed: app.bot_detection === 'advanced' && app.advanced_attested,
    },
    // The VAPID public key the SDK subscribes with; null unless the app's provider is Web Push.
    push: { webpush_public_key: await webPushPublicKey(ctx, app.id) },
  };
}

/** The body of POST /v1/website/visits, as the contract defines it (the app is passed apart). */
export type VisitInput = Omit<VisitRequest, 'app_id'>;

/** The documented basic signals; other keys are kept only in attested advanced mode. */
export const BASIC_SIGNAL_KEYS = ['js_enabled', 'language', 'webdriver'] as const;

/** The signals stored for a visit: every key in attested advanced mode, else the documented ones. */
export function keptSignals(
  app: Pick<AppRow, 'bot_detection' | 'advanced_attested'>,
  signals: Record<string, unknown> | undefined,
): Record<string, unknown> {
  if (!signals) return {};
  if (app.bot_detection === 'advanced' && app.advanced_attested) return signals;
  const kept: Record<string, unknown> = {};
  for (const key of BASIC_SIGNAL_KEYS) if (signals[key] !== undefined) kept[key] = signals[key];
  return kept;
}

export async function logVisit(ctx: ServiceContext, app: AppRow, input: VisitInput, caller: Caller) {
  if (input.advanced_signals !== undefined && !(app.bot_detection === 'advanced' && app.advanced_attested)) {
    throw new ForbiddenError(
      'ADVANCED_SIGNALS_NOT_ALLOWED',
      'This app does not accept advanced_signals: enable advanced bot detection and attest that visitors see a consent message, or send basic signals only.',
    );
  }
  if (app.bot_detection === 'off') return { logged: false, visitId: null, isBot: null };
  const now = ctx.clock();
  const errors: FieldError[] = [];
  checkProperties(input.signals, '/body/signals', errors);
  checkProperties(input.advanced_signals, '/body/advanced_signals', errors);
  refuseIfAny(errors);

  const ua = input.ua ?? caller.ua;
  const signals = keptSignals(app, input.signals);
  const verdict = classifyVisit({
    ua,
    signals,
    advancedSignals: app.bot_detection === 'advanced' ? input.advanced_signals : undefined,
  });
  const visitId = uuidv7(now.getTime());
  const pageViewId = uuidv7(now.getTime());
  const path = input.path ?? new URL(input.visit_url).pathname;
  const properties: Record<string, unknown> = { url: input.visit_url, path, visit_id: visitId };
  if (input.referrer) properties.referrer = input.referrer;
  if (input.page_title) properties.title = input.page_title;
  const at = input.timestamp === undefined ? now : new Date(input.timestamp);
  // The visit and its page_view are one write: neither is stored without the other.
  await ingest(ctx, {
    app,
    source: 'website',
    at: '/body',
    names: { user_id: 'visitor_id' },
    bot: verdict.isBot,
    caller: { ip: caller.ip, ua },
    now,
    events: [
      {
        id: pageViewId,
        user_id: input.visitor_id,
        event_name: 'page_view',
        properties,
        ...(input.timestamp === undefined ? {} : { timestamp: input.timestamp }),
      },
    ],
    visit: {
      id: visitId,
      app_id: app.id,
      userRef: input.visitor_id,
      visitor_id: input.visitor_id,
      visit_url: input.visit_url,
      path,
      referrer: input.referrer ?? null,
      page_title: input.page_title ?? null,
      ua,
      ip: caller.ip,
      signals,
      advanced_signals: app.bot_detection === 'advanced' ? (input.advanced_signals ?? null) : null,
      is_bot: verdict.isBot,
      bot_reason: verdict.isBot ? verdict.reasons.join(',') : null,
      event_id: pageViewId,
      created_at: at,
    },
  });
  return { logged: true, visitId, isBot: verdict.isBot };
}

export async function trackWebsiteEvent(ctx: ServiceContext, app: AppRow, input: WebsiteEventRequest, caller: Caller) {
  const properties = { ...(input.properties ?? {}) };
  if (input.url !== undefined && properties.url === undefined) properties.url = input.url;
  const [result] = await ingest(ctx, {
    app,
    source: 'website',
    at: '/body',
    names: { user_id: 'visitor_id' },
    bot: 'visitor',
    caller,
    events: [
      {
        user_id: input.visitor_id,
        event_name: input.event_name,
        properties,
        ...(input.timestamp === undefined ? {} : { timestamp: input.timestamp }),
      },
    ],
  });
  return result!.eventId;
}

const NOT_VERIFIED_TARGET = (userId: string) =>
  `The user "${userId}" was not created from the website, so a browser may only link to it with a valid user_hash. Compute the hash on your server (hex HMAC-SHA256 of the user id with the app's identity secret) and pass it to ServiceWeb.setUserId(id, { userHash }).`;
const NOT_VERIFIED_VISITOR = (visitorId: string) =>
  `The visitor id "${visitorId}" names a user that was not created from the website, so it is not an anonymous visitor and cannot be linked to another user without a valid user_hash.`;

/**
 * Links the visitor to the user `userId` (created if new): an anonymous visitor's events,
 * visits and subscriptions move to that user and `visitorId` becomes its alias. A visitor id
 * that already names a known user (it has an email, a phone or aliases, or it was not created
 * anonymously from the website) is never merged into another user: that is a different person
 * signing in on the same browser.
 *
 * Identity verification: with a valid `userHash` any user may be named. Without one, only a
 * user created from the website may be reached, and a visitor id naming any other user is
 * refused: both 403 IDENTITY_NOT_VERIFIED (as is a wrong hash).
 */
export async function identify(ctx: ServiceContext, app: AppRow, visitorId: string, userId: string, userHash?: string) {
  const errors: FieldError[] = [];
  checkIdentifier(visitorId, '/body/visitor_id', errors);
  checkIdentifier(userId, '/body/user_id', errors);
  refuseIfAny(errors);
  const verified = (await checkUserHash(ctx, app.id, userId, userHash)) === true;
  const now = ctx.clock();
  let merged: { from: string; to: string } | null = null;
  const createdVia: CreatedVia = verified ? 'website_verified' : 'website';
  const user = await inTransaction(ctx.db, async (trx) => {
    const reachable = (u: { created_via: CreatedVia }) => verified || u.created_via === 'website';
    const createUser = async () => {
      const created = await insertUserIfAbsent(trx, app.id, {
        id: uuidv7(now.getTime()),
        externalId: userId,
        createdVia,
        at: now,
      });
      // The REST API may have created it in the meantime.
      if (!reachable(created)) throw new IdentityNotVerifiedError(NOT_VERIFIED_TARGET(userId));
      return created;
    };
    const addAlias = (ownerId: string) => addAliasIfAbsent(trx, app.id, visitorId, ownerId, now);

    let target = await findUserByIdentifier(trx, app.id, userId);
    if (target && !reachable(target)) throw new IdentityNotVerifiedError(NOT_VERIFIED_TARGET(userId));
    const visitor = await lockUserByExternalId(trx, app.id, visitorId);
    const visitorOwner = visitor ?? (await findUserByIdentifier(trx, app.id, visitorId));
    if (!verified && visitorOwner && visitorOwner.id !== target?.id && visitorOwner.created_via !== 'website') {
      throw new IdentityNotVerifiedError(NOT_VERIFIED_VISITOR(visitorId));
    }
    if (!visitor) {
      target ??= await createUser();
      if (visitorId !== userId && !(await findAlias(trx, app.id, visitorId))) await addAlias(target.id);
      return target;
    }
    if (target?.id === visitor.id) return target;
    const anonymous =
      visitor.created_via === 'website' &&
      !visitor.email &&
      !visitor.phone &&
      !(await hasAliases(trx, app.id, visitor.id));
    if (!anonymous) return target ?? (await createUser());
    if (!target) {
      // The visitor becomes the user: one row update keeps its whole history in place.
      const renamed = await renameUser(trx, app.id, visitor.id, { externalId: userId, createdVia, at: now });
      await addAlias(visitor.id);
      return renamed;
    }
    await mergeUserInto(trx, app.id, visitor.id, target.id, now);
    await addAlias(target.id);
    merged = { from: visitor.id, to: target.id };
    return target;
  });
  if (merged) {
    const { from, to } = merged as { from: string; to: string };
    await moveLateEvents(ctx.db, app.id, from, to);
  }
  return user as { id: string; external_id: string };
}

/**
 * Registers a browser's Web Push subscription for the visitor. The endpoint must be a public
 * https push service (400 otherwise); a visitor id naming a user that was not created
 * anonymously from the website needs that user's user_hash (403 IDENTITY_NOT_VERIFIED), so that
 * no page can route another user's notifications to its own browser.
 */
export async function subscribePush(ctx: ServiceContext, app: AppRow, input: PushSubscriptionRequest) {
  const errors: FieldError[] = [];
  checkIdentifier(input.visitor_id, '/body/visitor_id', errors);
  refuseIfAny(errors);
  await checkPushEndpoint(input.subscription.endpoint, ctx.config.pushEndpointAllowlist, '/body/subscription/endpoint');
  const verified = (await checkUserHash(ctx, app.id, input.visitor_id, input.user_hash)) === true;
  const now = ctx.clock();
  let user = await findUserByIdentifier(ctx.db, app.id, input.visitor_id);
  if (user && !verified && user.created_via !== 'website') {
    throw new IdentityNotVerifiedError(
      `The visitor id "${input.visitor_id}" names a user that was not created anonymously from the website; registering a push subscription for it needs its user_hash (pass it to ServiceWeb.setUserId(id, { userHash }) before subscribePush).`,
    );
  }
  if (!user) {
    user = await insertUserIfAbsent(ctx.db, app.id, {
      id: uuidv7(now.getTime()),
      externalId: input.visitor_id,
      createdVia: verified ? 'website_verified' : 'website',
      at: now,
    });
    if (!verified && user.created_via !== 'website') {
      throw new IdentityNotVerifiedError(
        `The visitor id "${input.visitor_id}" now names a user created through the REST API.`,
      );
    }
  }
  const { endpoint, expirationTime, keys } = input.subscription;
  return upsertPushSubscription(
    ctx.db,
    {
      id: uuidv7(now.getTime()),
      app_id: app.id,
      user_id: user.id,
      endpoint,
      p256dh: keys.p256dh,
      auth: keys.auth,
      expires_at: typeof expirationTime === 'number' ? new Date(expirationTime) : null,
    },
    now,
  );
}
