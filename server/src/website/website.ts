// The website surface behind the browser SDK: users from forms, the SDK's configuration, page
// visits (classified human or bot, each also a `page_view` event), custom events, linking an
// anonymous visitor to a known user, and Web Push subscriptions. Callers have already checked
// that the request's origin may act for the app.
import type { PushSubscriptionRequest, VisitRequest, WebsiteEventRequest, WebsiteUserRequest } from '@tally/client';
import type { ServiceContext } from '../context.js';
import { checkPushEndpoint } from '../engagement/push/endpoint-guard.js';
import { webPushPublicKey } from '../engagement/push/send.js';
import { type FieldError, ForbiddenError, refuseIfAny } from '../errors.js';
import { uuidv7 } from '../ids.js';
import type { Tx } from '../storage/handle.js';
import type { AppRow } from '../storage/tenancy.js';
import {
  addAliasIfAbsent,
  findAlias,
  findUserByIdentifier,
  insertUserIfAbsent,
  inTransaction,
  lockUserByExternalId,
  lockUserById,
  lockUserByIdentifier,
  openToBrowsers,
  renameUser,
  type UserRow,
  updateUserProfile,
} from '../storage/users.js';
import { IdentityNotVerifiedError } from '../tracking/browser-writes.js';
import { ingest } from '../tracking/ingestion.js';
import { checkIdentifier, checkProperties } from '../tracking/limits.js';
import { classifyVisit } from './bot-detection.js';
import { type BrowserIdentity, browserIdentity, requireOpen } from './identity-rule.js';
import { hasAliases, mergeUserInto, moveLateEvents, upsertPushSubscription } from './queries/website.js';

/** Who sent a website request, as seen by the server. */
export interface Caller {
  ip: string | null;
  /** The User-Agent header. */
  ua: string | null;
}

/**
 * Creates or updates a user from a website form, keyed by `externalId`, else the lower-cased
 * email. Without a valid `userHash` for that key, only a user open to browsers may be changed
 * (403 IDENTITY_NOT_VERIFIED otherwise, nothing written).
 */
export async function upsertWebsiteUser(ctx: ServiceContext, app: AppRow, input: WebsiteUserRequest): Promise<UserRow> {
  const errors: FieldError[] = [];
  if (input.externalId !== undefined) checkIdentifier(input.externalId, '/body/externalId', errors);
  refuseIfAny(errors);
  const key = input.externalId ?? input.email.trim().toLowerCase();
  const identity = await browserIdentity(ctx, app.id, key, input.userHash);
  const properties: Record<string, unknown> = {};
  if (input.firstName) properties.first_name = input.firstName;
  if (input.lastName) properties.last_name = input.lastName;
  const fullName = [input.firstName, input.lastName].filter(Boolean).join(' ') || input.name;
  if (fullName) properties.name = fullName;
  const now = ctx.clock();
  return inTransaction(ctx.db, async (tx) => {
    const user = await lockOrCreate(tx, app.id, key, identity, now, {
      // origin records where the user came from first; a later form on another page keeps it.
      origin: { channel: 'website', website_url: input.websiteUrl },
    });
    requireOpen(identity, user, key);
    const changed = await updateUserProfile(tx, app.id, user.id, {
      set: properties,
      remove: [],
      email: input.email.trim(),
      updatedAt: now,
    });
    return changed!;
  });
}

/**
 * The user an identifier names, locked (created first when there is none): the row the identity
 * rule is checked on, as committed by whoever created or wrote it before.
 */
async function lockOrCreate(
  tx: Tx,
  appId: string,
  identifier: string,
  identity: BrowserIdentity,
  now: Date,
  extra: { origin?: Record<string, unknown> } = {},
): Promise<UserRow> {
  for (;;) {
    const found = await lockUserByIdentifier(tx, appId, identifier);
    if (found) return found;
    // A concurrent creation (the REST API's included) wins; its row is then the one checked. A
    // user erased between the two reads is created anew on the next turn.
    await insertUserIfAbsent(tx, appId, {
      id: uuidv7(now.getTime()),
      externalId: identifier,
      createdVia: identity.createdVia,
      at: now,
      ...extra,
    });
  }
}

/** What the SDK is configured from: the app, and the VAPID public key browsers subscribe with (null unless Web Push). */
export async function websiteConfig(
  ctx: ServiceContext,
  app: AppRow,
): Promise<{ app: AppRow; webPushPublicKey: string | null }> {
  return { app, webPushPublicKey: await webPushPublicKey(ctx, app.id) };
}

/** The body of POST /v1/website/visits, as the contract defines it (the app is passed apart). */
export type VisitInput = Omit<VisitRequest, 'app_id'>;

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
  checkProperties(input.advanced_signals, '/body/advanced_signals', errors);
  refuseIfAny(errors);
  const { verified } = await browserIdentity(ctx, app.id, input.visitor_id, input.user_hash);

  const ua = input.ua ?? caller.ua;
  // The contract admits the documented signals only (js_enabled, language, webdriver).
  const signals: Record<string, unknown> = { ...(input.signals ?? {}) };
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
    verified,
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
  const { verified } = await browserIdentity(ctx, app.id, input.visitor_id, input.user_hash);
  const properties = { ...(input.properties ?? {}) };
  if (input.url !== undefined && properties.url === undefined) properties.url = input.url;
  const [result] = await ingest(ctx, {
    app,
    source: 'website',
    at: '/body',
    names: { user_id: 'visitor_id' },
    verified,
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

const NOT_VERIFIED_VISITOR = (visitorId: string) =>
  `The visitor id "${visitorId}" names a user your backend created or wrote through the REST API (or one a browser identified with a hash), so it is not an anonymous visitor and cannot be linked to another user without a valid user_hash.`;

/**
 * Links the visitor to the user `userId` (created if new): an anonymous visitor's events,
 * visits and subscriptions move to that user and `visitorId` becomes its alias. A visitor id
 * that already names a known user (it has an email, a phone or aliases, or it is not open to
 * browsers) is never merged into another user: that is a different person signing in on the
 * same browser.
 *
 * Identity verification: with a valid `userHash` any user may be named. Without one, only a
 * user open to browsers may be reached, and a visitor id naming any other user is refused: both
 * 403 IDENTITY_NOT_VERIFIED (as is a wrong hash).
 */
export async function identify(ctx: ServiceContext, app: AppRow, visitorId: string, userId: string, userHash?: string) {
  const errors: FieldError[] = [];
  checkIdentifier(visitorId, '/body/visitor_id', errors);
  checkIdentifier(userId, '/body/user_id', errors);
  refuseIfAny(errors);
  const identity = await browserIdentity(ctx, app.id, userId, userHash);
  const now = ctx.clock();
  let merged: { from: string; to: string } | null = null;
  const user = await inTransaction(ctx.db, async (trx) => {
    const createUser = async () => {
      const created = await insertUserIfAbsent(trx, app.id, {
        id: uuidv7(now.getTime()),
        externalId: userId,
        createdVia: identity.createdVia,
        at: now,
      });
      // The REST API may have created it in the meantime.
      requireOpen(identity, created, userId);
      return created;
    };
    const addAlias = (ownerId: string) => addAliasIfAbsent(trx, app.id, visitorId, ownerId, now);

    let target = await findUserByIdentifier(trx, app.id, userId);
    if (target) requireOpen(identity, target, userId);
    const visitor = await lockUserByExternalId(trx, app.id, visitorId);
    const visitorOwner = visitor ?? (await findUserByIdentifier(trx, app.id, visitorId));
    if (!identity.verified && visitorOwner && visitorOwner.id !== target?.id && !openToBrowsers(visitorOwner)) {
      throw new IdentityNotVerifiedError(NOT_VERIFIED_VISITOR(visitorId));
    }
    if (target && target.id !== visitor?.id) {
      // The target as committed now, locked after the visitor (the order merges take): a REST
      // write since the first read is seen here and refused.
      target = await lockUserById(trx, app.id, target.id);
      if (target) requireOpen(identity, target, userId);
    }
    if (!visitor) {
      target ??= await createUser();
      if (visitorId !== userId && !(await findAlias(trx, app.id, visitorId))) await addAlias(target.id);
      return target;
    }
    if (target?.id === visitor.id) return target;
    const anonymous =
      openToBrowsers(visitor) && !visitor.email && !visitor.phone && !(await hasAliases(trx, app.id, visitor.id));
    if (!anonymous) return target ?? (await createUser());
    if (!target) {
      // The visitor becomes the user: one row update keeps its whole history in place.
      const renamed = await renameUser(trx, app.id, visitor.id, {
        externalId: userId,
        createdVia: identity.createdVia,
        at: now,
      });
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
 * https push service (400 otherwise); a visitor id naming a user that is not open to browsers
 * needs that user's user_hash (403 IDENTITY_NOT_VERIFIED), so that no page can route another
 * user's notifications to its own browser.
 */
export async function subscribePush(ctx: ServiceContext, app: AppRow, input: PushSubscriptionRequest) {
  const errors: FieldError[] = [];
  checkIdentifier(input.visitor_id, '/body/visitor_id', errors);
  refuseIfAny(errors);
  await checkPushEndpoint(input.subscription.endpoint, ctx.config.pushEndpointAllowlist, '/body/subscription/endpoint');
  const identity = await browserIdentity(ctx, app.id, input.visitor_id, input.user_hash);
  const now = ctx.clock();
  const { endpoint, expirationTime, keys } = input.subscription;
  return inTransaction(ctx.db, async (tx) => {
    const user = await lockOrCreate(tx, app.id, input.visitor_id, identity, now);
    requireOpen(identity, user, input.visitor_id);
    return upsertPushSubscription(
      tx,
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
  });
}
