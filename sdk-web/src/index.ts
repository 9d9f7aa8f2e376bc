// ServiceWeb, Tally's browser SDK: page views (single-page apps included), custom events, users
// from forms, identifying a visitor after login, Web Push subscriptions, opt-out. Every public
// member swallows its own errors: the host page never sees an exception from here.
import { type FormFields, type FormOptions, registerForm as hookForm, listen } from './forms.js';
import type {
  IdentifyRequest,
  PushSubscriptionRequest,
  VisitRequest,
  WebsiteConfig,
  WebsiteEventRequest,
  WebsiteUserRequest,
} from './gen/types.gen.js';
import { Queue } from './queue.js';
import { load, remove, save } from './storage.js';
import { advancedSignals, basicSignals, watchPages } from './tracker.js';
import { type Reply, send } from './transport.js';

export interface InitOptions {
  appId?: string;
  /** Page views on load and on every URL change (default true). */
  autoEvents?: boolean;
  /** Hook forms with an email input or data-service="true" (default true). */
  autoHook?: boolean;
  websiteConfigEndpoint?: string;
  visitsEndpoint?: string;
  apiBase?: string;
  /** Storage key of the user id (default service_user_id). */
  userIdStorageKey?: string;
  debug?: boolean;
  emailField?: string;
  emailSelectors?: string[];
  /** Send nothing while the browser signals Global Privacy Control (default false). */
  respectGpc?: boolean;
}

export type { FormOptions } from './forms.js';
// Request bodies are the contract's types (./gen, generated from Tally's OpenAPI document).
export type {
  ErrorResponse,
  IdentifyRequest,
  PushSubscriptionRequest,
  VisitRequest,
  WebsiteConfig,
  WebsiteEventRequest,
  WebsiteUserRequest,
} from './gen/types.gen.js';

/**
 * A user for sendUser: the body of `POST /v1/website/users`, whose `appId` and `websiteUrl` default
 * to init's appId and this page's origin. `userHash` proves the user's key (externalId, else the
 * lower-cased email); see setUserId.
 */
export type UserPayload = Omit<WebsiteUserRequest, 'appId' | 'websiteUrl'> &
  Partial<Pick<WebsiteUserRequest, 'appId' | 'websiteUrl'>>;

// Replaced by the server with its public address when it serves this script.
const EMBEDDED_BASE = '__TALLY_API_BASE__';
const script = typeof document !== 'undefined' ? (document.currentScript as HTMLScriptElement | null) : null;
const OPT_OUT = 'service_opt_out';

let o: InitOptions & { userIdStorageKey: string } = { userIdStorageKey: 'service_user_id' };
let started = false;
let outbox: Queue | null = null;
let config: Promise<WebsiteConfig | null> | null = null;

const log = (...args: unknown[]) => {
  if (o.debug) console.log('[ServiceWeb]', ...args);
};

function base(apiBase = o.apiBase): string {
  if (apiBase) return apiBase.replace(/\/+$/, '');
  if (EMBEDDED_BASE.charAt(0) !== '_') return EMBEDDED_BASE;
  try {
    if (script?.src) return new URL(script.src).origin;
  } catch {}
  return location.origin;
}

function queue(): Queue {
  outbox ??= new Queue('service_queue', { log });
  return outbox;
}

function blocked(): boolean {
  return (
    load(OPT_OUT) === '1' ||
    Boolean(o.respectGpc && (navigator as Navigator & { globalPrivacyControl?: boolean }).globalPrivacyControl)
  );
}

function newId(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 15) | 64;
  b[8] = (b[8]! & 63) | 128;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The persisted user id: the id set with setUserId, else an anonymous id generated once. */
function userId(): string {
  let id = load(o.userIdStorageKey);
  if (!id) {
    id = newId();
    save(o.userIdStorageKey, id);
  }
  return id;
}

function post(path: string, body: unknown, apiBase?: string): Promise<Reply | null> {
  if (blocked()) {
    log('not sent (opted out)', path);
    return Promise.resolve(null);
  }
  log('send', path, body);
  return queue().push(base(apiBase) + path, body);
}

function loadConfig(): Promise<WebsiteConfig | null> {
  config ??= send(
    `${base()}${o.websiteConfigEndpoint ?? '/v1/website/config'}?app_id=${encodeURIComponent(o.appId ?? '')}`,
  ).then((r) => {
    log('config', r.status, r.body);
    if (!r.ok) config = null; // ask again next time
    return r.ok ? (r.body as WebsiteConfig) : null;
  });
  return config;
}

const hashKey = () => `${o.userIdStorageKey}_hash`;

/** The hash given to setUserId for the current user id, as the body field `user_hash`. */
function signed(): { user_hash?: string } {
  const userHash = load(hashKey());
  return userHash ? { user_hash: userHash } : {};
}

/** Page addresses Tally accepts: http(s) URLs; anything else (an app's referrer) is left out. */
const webUrl = (url: string) => (/^https?:/i.test(url) ? url : '');

function event(appId: string, name: string, properties?: Record<string, unknown>): Promise<Reply | null> {
  return post('/v1/website/events', {
    app_id: appId,
    visitor_id: userId(),
    event_name: name,
    properties: properties ?? {},
    url: location.href,
    timestamp: new Date().toISOString(),
    ...signed(),
  } satisfies WebsiteEventRequest);
}

async function pageView(url: string, referrer: string): Promise<void> {
  const appId = o.appId;
  if (!appId || blocked()) return;
  const timestamp = new Date().toISOString();
  const cfg = await loadConfig();
  const path = location.pathname;
  if (cfg?.bot_detection?.enabled === false) {
    await event(appId, 'page_view', { path, title: document.title, referrer });
    return;
  }
  await post(o.visitsEndpoint ?? '/v1/website/visits', {
    app_id: appId,
    visitor_id: userId(),
    visit_url: url,
    path,
    referrer: webUrl(referrer),
    page_title: document.title,
    timestamp,
    ua: navigator.userAgent,
    signals: basicSignals(),
    ...(cfg?.bot_detection?.advanced_allowed ? { advanced_signals: advancedSignals() } : {}),
    ...signed(),
  } satisfies VisitRequest);
}

function onForm(form: HTMLFormElement, fields: FormFields | null, options: FormOptions): void {
  const appId = options.appId ?? o.appId;
  if (!appId) return;
  if (fields) void sendUser(options, { ...fields, appId });
  void post(
    '/v1/website/events',
    {
      app_id: appId,
      visitor_id: userId(),
      event_name: 'form_submit',
      properties: { form_id: form.id || null, form_name: form.getAttribute('name'), has_email: Boolean(fields) },
      url: location.href,
      timestamp: new Date().toISOString(),
      ...signed(),
    } satisfies WebsiteEventRequest,
    options.apiBase,
  );
}

function startForms(): void {
  listen(onForm, () => (o.autoHook === false ? null : { emailField: o.emailField, emailSelectors: o.emailSelectors }));
}

/** Configures the SDK; page views and form hooking start with the first call. */
export function init(options: InitOptions = {}): void {
  try {
    o = { ...o, ...options, userIdStorageKey: options.userIdStorageKey ?? o.userIdStorageKey };
    config = null;
    log('init', o);
    if (started) return;
    started = true;
    startForms();
    addEventListener('online', () => queue().retryNow());
    addEventListener('pagehide', () => queue().unload());
    void queue().flush();
    if (o.autoEvents !== false) watchPages((url, referrer) => void pageView(url, referrer).catch(log));
  } catch (err) {
    log(err);
  }
}

/** Creates or updates a user in the background; resolves with the server's answer, or null. */
export async function sendUser(options: FormOptions = {}, payload: UserPayload): Promise<unknown> {
  try {
    // The user is keyed by externalId, else the lower-cased email: the hash of setUserId's id
    // proves that key only when it is that id.
    const key =
      payload.externalId ??
      String(payload.email ?? '')
        .trim()
        .toLowerCase();
    const userHash = payload.userHash ?? (key === load(o.userIdStorageKey) ? signed().user_hash : undefined);
    const appId = payload.appId ?? options.appId ?? o.appId;
    if (!appId) {
      log('sendUser without an appId');
      return null;
    }
    const body: WebsiteUserRequest = {
      ...payload,
      appId,
      websiteUrl: payload.websiteUrl ?? options.websiteUrl ?? location.origin,
      ...(userHash ? { userHash } : {}),
    };
    const reply = await post(options.endpoint ?? '/v1/website/users', body, options.apiBase);
    return reply?.ok ? reply.body : null;
  } catch (err) {
    log(err);
    return null;
  }
}

/** Hooks one form by hand (it need not have an email input nor autoHook). */
export function registerForm(form: HTMLFormElement, options: FormOptions = {}): void {
  try {
    hookForm(form, options);
    startForms();
  } catch (err) {
    log(err);
  }
}

export function trackEvent(name: string, properties?: Record<string, unknown>): void {
  try {
    if (o.appId) void event(o.appId, name, properties);
    else log('trackEvent before init({appId})');
  } catch (err) {
    log(err);
  }
}

/**
 * Makes `id` the user id of later calls and links this browser's earlier activity to it.
 * `userHash`, computed by your server (hex HMAC-SHA256 of the id with the app's identity secret),
 * proves the id: it is kept and sent with every later call (events, visits, users, push
 * subscriptions), and needed for any user your backend created or wrote through the REST API.
 */
export function setUserId(id: string, options?: { userHash?: string }): void {
  try {
    const previous = userId();
    const userHash = options?.userHash;
    if (!id) return;
    if (userHash) save(hashKey(), userHash);
    else if (id !== previous) remove(hashKey());
    if (id === previous) return;
    save(o.userIdStorageKey, String(id));
    if (o.appId) {
      void post('/v1/website/identify', {
        app_id: o.appId,
        visitor_id: previous,
        user_id: String(id),
        ...(userHash ? { user_hash: userHash } : {}),
      } satisfies IdentifyRequest);
    }
  } catch (err) {
    log(err);
  }
}

/** Stops all sending from this browser (remembered) and drops what is queued. */
export function optOut(): void {
  save(OPT_OUT, '1');
  queue().clear();
}

export function optIn(): void {
  remove(OPT_OUT);
}

function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const b64 = (base64url + '='.repeat((4 - (base64url.length % 4)) % 4)).replace(/-/g, '+').replace(/_/g, '/');
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

/**
 * Subscribes this browser to Web Push with the app's VAPID key (the page must have registered a
 * service worker) and registers the subscription. Resolves with the subscription id, or null.
 */
export async function subscribePush(registration?: ServiceWorkerRegistration): Promise<string | null> {
  try {
    const appId = o.appId;
    if (!appId || blocked()) return null;
    const key = (await loadConfig())?.push?.webpush_public_key;
    if (!key) {
      log('Web Push is not configured for this app');
      return null;
    }
    const reg = registration ?? (await navigator.serviceWorker?.getRegistration());
    if (!reg) {
      log('subscribePush needs a registered service worker');
      return null;
    }
    const sub =
      (await reg.pushManager.getSubscription()) ??
      (await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key) }));
    const { endpoint, expirationTime, keys } = sub.toJSON();
    if (!endpoint || !keys?.p256dh || !keys.auth) return null;
    const body: PushSubscriptionRequest = {
      app_id: appId,
      visitor_id: userId(),
      subscription: { endpoint, expirationTime, keys: { p256dh: keys.p256dh, auth: keys.auth } },
      ...signed(),
    };
    const reply = await send(`${base()}/v1/website/push-subscriptions`, body);
    log('push subscription', reply.status, reply.body);
    return reply.ok ? ((reply.body as { subscription_id?: string }).subscription_id ?? null) : null;
  } catch (err) {
    log(err);
    return null;
  }
}

// <script src=".../service-web.js" data-app-id="..."> starts the SDK without code.
try {
  const appId = script?.getAttribute('data-app-id');
  if (appId) init({ appId });
} catch {}
