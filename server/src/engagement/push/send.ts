// Push notifications: per-app provider configuration (secrets sealed with SECRET_KEY), sending one
// notification to one user (static or generated text) with a delivery record per send, and the
// tracked click link.
import type { PushProviderConfigure, SendPushRequest } from '@tally/client';
import { getApp } from '../../admin/admin.js';
import type { ServiceContext } from '../../context.js';
import { AppError, type FieldError, NotFoundError, ValidationError } from '../../errors.js';
import { isUuid, uuidv7 } from '../../ids.js';
import { openWithRing, seal } from '../../secrets.js';
import { type Actor, recordAppAction } from '../../storage/audit.js';
import { inTransaction } from '../../storage/handle.js';
import type { AppRow } from '../../storage/tenancy.js';
import { findUserByIdentifier, type UserRow } from '../../storage/users.js';
import { addBatchClick, findBatch } from '../queries/campaign-sends.js';
import { attemptDelivery } from './attempts.js';
import { composeMessage, finishGenerated } from './composer.js';
import type { ProviderError, ProviderKind } from './provider.js';
import { type PreparedProvider, providerFor } from './providers.js';
import {
  type DeliveryRow,
  findDelivery,
  findProvider,
  insertDelivery,
  markClicked,
  type ProviderSettings,
  type PushProviderRow,
  saveProvider,
} from './queries/push.js';
import { generateVapidKeys } from './webpush.js';

/** The body of PUT /admin/v1/apps/{app_id}/push-provider, as the contract defines it. */
export type ProviderInput = PushProviderConfigure;

type InputField = Exclude<keyof ProviderInput, 'provider'>;

/** Fields each provider needs, and the ones it accepts (base_url is accepted by all). */
const FIELDS: Record<ProviderKind, { required: InputField[]; secret: InputField[] }> = {
  wonderpush: { required: ['access_token'], secret: ['access_token'] },
  onesignal: { required: ['onesignal_app_id', 'rest_api_key'], secret: ['rest_api_key'] },
  webpush: { required: ['vapid_subject'], secret: [] },
  webhook: { required: ['webhook_url', 'webhook_secret'], secret: ['webhook_secret'] },
};
const ALL_FIELDS: InputField[] = [
  'access_token',
  'onesignal_app_id',
  'rest_api_key',
  'webhook_url',
  'webhook_secret',
  'vapid_subject',
  'base_url',
];

function checkInput(input: ProviderInput): void {
  const { required } = FIELDS[input.provider];
  const errors: FieldError[] = [];
  for (const field of required) {
    if (input[field] === undefined)
      errors.push({ path: `/body/${field}`, message: `is required for the ${input.provider} provider` });
  }
  for (const field of ALL_FIELDS) {
    if (field !== 'base_url' && input[field] !== undefined && !required.includes(field)) {
      errors.push({ path: `/body/${field}`, message: `is not used by the ${input.provider} provider` });
    }
  }
  if (input.vapid_subject !== undefined && !/^(mailto:\S+@\S+|https:\/\/\S+)$/i.test(input.vapid_subject)) {
    errors.push({
      path: '/body/vapid_subject',
      message: 'must be a mailto: address or an https: URL that identifies you',
    });
  }
  for (const field of ['webhook_url', 'base_url'] as const) {
    const value = input[field];
    if (value !== undefined && !/^https?:\/\//i.test(value)) {
      errors.push({ path: `/body/${field}`, message: 'must be an http: or https: URL' });
    }
  }
  if (errors.length > 0)
    throw new ValidationError(`Invalid push provider: ${errors[0]!.path} ${errors[0]!.message}.`, errors);
}

/** Sets (or replaces) the app's push provider. Web Push keeps its VAPID keys across changes. */
export async function configureProvider(
  ctx: ServiceContext,
  appId: string,
  input: ProviderInput,
  actor: Actor,
): Promise<PushProviderRow> {
  const app = await getApp(ctx, appId);
  checkInput(input);
  const secretKey = ctx.config.secretKey;
  if (!secretKey) {
    throw new ValidationError(
      "Push provider secrets are encrypted with the server's SECRET_KEY, which is not set. With PostgreSQL, Tally does not generate one: set SECRET_KEY (at least 16 characters, the same on every instance, kept stable) in the server's environment, restart it, and configure the provider again.",
      [{ path: '/body/provider', message: 'needs SECRET_KEY to be set on the server' }],
    );
  }
  const settings: ProviderSettings = {};
  const secrets: Record<string, string> = {};
  if (input.base_url) settings.base_url = input.base_url;
  if (input.provider === 'onesignal') settings.onesignal_app_id = input.onesignal_app_id;
  if (input.provider === 'webhook') settings.webhook_url = input.webhook_url;
  for (const field of FIELDS[input.provider].secret) secrets[field] = input[field]!;
  if (input.provider === 'webpush') {
    settings.vapid_subject = input.vapid_subject;
    const keys = (await existingVapidKeys(ctx, app.id)) ?? generateVapidKeys();
    settings.vapid_public_key = keys.publicKey;
    secrets.vapid_private_key = keys.privateKey;
  }
  const previous = await findProvider(ctx.db, app.id);
  const row = await inTransaction(ctx.db, async (tx) => {
    const saved = await saveProvider(
      tx,
      { app_id: app.id, provider: input.provider, settings, secrets: seal(secretKey, app.id, secrets) },
      ctx.clock(),
    );
    await recordAppAction(tx, {
      appId: app.id,
      action: 'push_provider.configure',
      actor,
      at: ctx.clock(),
      // The secrets' names, never their values.
      details: {
        provider: input.provider,
        previous_provider: previous?.provider ?? null,
        settings,
        secrets_set: Object.keys(secrets),
      },
    });
    return saved;
  });
  ctx.logger.info({ app_id: app.id, provider: input.provider }, 'push provider configured');
  return row;
}

async function existingVapidKeys(ctx: ServiceContext, appId: string) {
  const row = await findProvider(ctx.db, appId);
  if (row?.provider !== 'webpush' || !row.secrets || !row.settings.vapid_public_key) return null;
  try {
    const privateKey = openWithRing(ctx.config, appId, row.secrets).value.vapid_private_key;
    return privateKey ? { publicKey: row.settings.vapid_public_key, privateKey } : null;
  } catch {
    return null; // SECRET_KEY changed: new keys, browsers subscribe again
  }
}

export async function getProvider(ctx: ServiceContext, appId: string): Promise<PushProviderRow> {
  const app = await getApp(ctx, appId);
  const row = await findProvider(ctx.db, app.id);
  if (!row) throw new NotFoundError(`The app ${app.id} has no push provider configured.`);
  return row;
}

/** The VAPID public key browsers subscribe with, or null unless the app uses Web Push. */
export async function webPushPublicKey(ctx: ServiceContext, appId: string): Promise<string | null> {
  const row = await findProvider(ctx.db, appId);
  return row?.provider === 'webpush' ? (row.settings.vapid_public_key ?? null) : null;
}

// ---- Sending ----

/** The body of POST /v1/sendpush, as the contract defines it. */
export type SendInput = SendPushRequest;

export interface SendResult {
  delivery: DeliveryRow;
  generatedMessage?: string;
  /** Why the first attempt did not go through, when the job runner retries it. */
  retrying?: ProviderError;
}

const SYSTEM_PROMPT =
  'You write the text of one mobile or web push notification, shown under its title. Follow the ' +
  'instructions you are given. Answer with the notification text only: no title, no quotes, no ' +
  'preamble, no markdown.';

/**
 * Text for a prompt: the model's when one is configured (cut to the limit), else the composer's.
 * When the model fails, the composer writes it, unless `strict`: then the failure is thrown (a
 * trigger occurrence is tried again later rather than sent with other words).
 */
export async function generateMessage(
  ctx: ServiceContext,
  prompt: string,
  maxCharacters: number,
  title?: string,
  strict = false,
) {
  if (!ctx.llm) return composeMessage(prompt, maxCharacters);
  try {
    const answer = await ctx.llm.text({
      system: `${SYSTEM_PROMPT}${title ? ` The title is: ${title}` : ''}`,
      prompt,
      maxCharacters,
    });
    return finishGenerated(answer, prompt, maxCharacters);
  } catch (err) {
    if (strict) throw err;
    ctx.logger.warn(
      { err: (err as Error).message },
      'language model failed; push text written by the built-in composer',
    );
    return composeMessage(prompt, maxCharacters);
  }
}

/** The tracked click link of a delivery. `linkBase` is PUBLIC_BASE_URL or the request's origin. */
export const clickLink = (linkBase: string, deliveryId: string) => `${linkBase.replace(/\/+$/, '')}/v1/r/${deliveryId}`;

/** The app's adapter with its secrets opened; PUSH_NOT_CONFIGURED (400) without a provider. */
export async function prepareProvider(ctx: ServiceContext, app: AppRow): Promise<PreparedProvider> {
  const row = await findProvider(ctx.db, app.id);
  if (!row) {
    throw new AppError(
      400,
      'PUSH_NOT_CONFIGURED',
      'This app has no push provider configured. An operator sets one with `tally push configure` (admin API PUT /admin/v1/apps/{app_id}/push-provider).',
    );
  }
  let secrets: Record<string, string> = {};
  try {
    secrets = row.secrets ? openWithRing(ctx.config, app.id, row.secrets).value : {};
  } catch (err) {
    ctx.logger.error(
      { app_id: app.id, provider: row.provider, err: (err as Error).message },
      'push provider secrets unreadable',
    );
    throw new AppError(
      500,
      'INTERNAL_ERROR',
      "The push provider's secrets cannot be read: SECRET_KEY is unset or has changed since the provider was configured. An operator sets the old key as SECRET_KEY_PREVIOUS (docs/rotation.md), or configures the provider again.",
    );
  }
  return {
    row,
    provider: providerFor(row, secrets, {
      db: ctx.db,
      clock: ctx.clock,
      allowlist: ctx.config.pushEndpointAllowlist,
    }),
  };
}

/**
 * Sends one notification to one known user through the app's provider and records the delivery:
 * the row is written `pending` before the provider is called (if that insert fails, nothing is
 * sent), then the first attempt is made (engagement/push/attempts.ts). Returns the row as that
 * attempt left it: `sent` or `delivered`, or still `pending` when the provider may take it later
 * (the job runner makes the next attempts) with `retrying` saying why. Throws
 * PUSH_NOT_CONFIGURED, or PROVIDER_ERROR (502) after recording the failed delivery.
 */
export async function deliver(
  ctx: ServiceContext,
  input: {
    app: AppRow;
    user: UserRow;
    title: string;
    message: string;
    generated?: boolean;
    actionUrl?: string;
    linkBase: string;
    /** The adapter, when the caller prepared it already (prepareProvider). */
    prepared?: PreparedProvider;
  },
): Promise<{ delivery: DeliveryRow; retrying?: ProviderError }> {
  const { app, user } = input;
  const prepared = input.prepared ?? (await prepareProvider(ctx, app));
  const id = uuidv7(ctx.clock().getTime());
  await insertDelivery(ctx.db, {
    id,
    app_id: app.id,
    user_id: user.id,
    campaign_id: null,
    provider: prepared.row.provider,
    title: input.title,
    message: input.message,
    generated: input.generated ?? false,
    action_url: input.actionUrl ?? null,
    provider_message_id: null,
    status: 'pending',
    error: null,
    recipients: 0,
    created_at: ctx.clock(),
    resolved_at: null,
  });
  const outcome = await attemptDelivery(ctx, {
    app,
    prepared,
    deliveryId: id,
    user,
    title: input.title,
    message: input.message,
    actionUrl: input.actionUrl ? clickLink(input.linkBase, id) : undefined,
    attempt: 1,
    log: {},
  });
  if (outcome.state === 'failed') {
    // The provider's own reply went to the log only, never to the caller.
    const failure = outcome.error;
    throw new AppError(
      502,
      'PROVIDER_ERROR',
      `The ${failure.provider} push provider did not accept the notification: ${failure.reason}`,
      { provider: failure.provider, status: failure.status, reason: failure.reason },
    );
  }
  const delivery = (await findDelivery(ctx.db, id))!;
  return outcome.state === 'retrying' ? { delivery, retrying: outcome.error } : { delivery };
}

/** POST /v1/sendpush. */
export async function sendPush(
  ctx: ServiceContext,
  app: AppRow,
  input: SendInput,
  linkBase: string,
): Promise<SendResult> {
  const hasMessage = input.message !== undefined;
  const hasPrompt = input.prompt !== undefined;
  if (hasMessage === hasPrompt) {
    const both = hasMessage;
    throw new ValidationError(
      both
        ? 'Send either message or prompt, not both.'
        : 'Send message (static text) or prompt (text written for you).',
      both
        ? [{ path: '/body/prompt', message: 'must be absent when message is given' }]
        : [{ path: '/body/message', message: 'is required when prompt is absent' }],
    );
  }
  const user = await findUserByIdentifier(ctx.db, app.id, input.user_id);
  if (!user) throw new NotFoundError(`No user has the id "${input.user_id}" in this app.`);
  // Before spending a language-model call on a send that cannot happen.
  const prepared = await prepareProvider(ctx, app);
  const message = hasPrompt
    ? await generateMessage(ctx, input.prompt!, input.max_characters ?? 150, input.title)
    : input.message!;
  const sent = await deliver(ctx, {
    app,
    user,
    title: input.title,
    message,
    generated: hasPrompt,
    actionUrl: input.action_url,
    linkBase,
    prepared,
  });
  return { ...sent, ...(hasPrompt ? { generatedMessage: message } : {}) };
}

/** GET /v1/r/{deliveryId}: records the first click and returns where to send the browser. */
export async function recordClick(ctx: ServiceContext, deliveryId: string): Promise<string> {
  const delivery = isUuid(deliveryId) ? await findDelivery(ctx.db, deliveryId) : undefined;
  if (!delivery) {
    // A campaign batch (one notification to many users) has one link, named by the batch id.
    const batch = isUuid(deliveryId) ? await findBatch(ctx.db, deliveryId) : undefined;
    if (!batch?.action_url) throw new NotFoundError('This notification link is unknown or has expired.');
    await addBatchClick(ctx.db, batch.app_id, batch.id);
    return batch.action_url;
  }
  if (!delivery.action_url) throw new NotFoundError('This notification link is unknown or has expired.');
  await markClicked(ctx.db, delivery.app_id, delivery.id, ctx.clock());
  return delivery.action_url;
}
