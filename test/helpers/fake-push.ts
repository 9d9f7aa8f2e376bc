// Local HTTP servers that speak the push providers' APIs, so each adapter is tested over real
// HTTP: WonderPush's Management API deliveries, OneSignal's create-notification, a Web Push
// service (RFC 8030) that verifies the VAPID JWT (RFC 8292) and decrypts the aes128gcm payload
// (RFC 8188/8291) with the subscription's private keys, and a webhook receiver that checks the
// HMAC signature. Each records what it received and refuses what the real API would refuse.
import {
  createDecipheriv,
  createECDH,
  createHmac,
  createPublicKey,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
  verify,
} from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  // biome-ignore lint/suspicious/noExplicitAny: a provider request body of any shape, checked field by field
  body: any;
}

type Answer = { status: number; body?: unknown; headers?: Record<string, string> };

interface Fake {
  baseUrl: string;
  requests: Received[];
  close(): Promise<void>;
}

async function serve(handle: (r: Received) => Answer | Promise<Answer>): Promise<Fake> {
  const requests: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks);
      let body: unknown = null;
      if (String(req.headers['content-type'] ?? '').includes('json')) {
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          body = undefined;
        }
      }
      const received: Received = {
        method: req.method ?? '',
        url: new URL(req.url ?? '/', 'http://localhost'),
        headers: req.headers,
        raw,
        body,
      };
      requests.push(received);
      const answer = await handle(received);
      res.writeHead(answer.status, {
        ...(answer.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...answer.headers,
      });
      res.end(answer.body !== undefined ? JSON.stringify(answer.body) : undefined);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

const isStringArray = (v: unknown): v is string[] =>
  Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string');

// ---- WonderPush: POST /v1/deliveries?accessToken=... ----

export async function startFakeWonderPush(options: {
  accessToken: string;
  answer?: (r: Received) => Answer | undefined | Promise<Answer | undefined>;
  /** Called after a delivery was made and before it is answered: a test may hold the answer. */
  hold?: (r: Received) => Promise<void> | undefined;
}) {
  let n = 0;
  // Every delivery made: one entry per call that reached the deliveries API and was accepted.
  const sent: { targetUserIds: string[] }[] = [];
  const fake = await serve(async (r) => {
    const fail = (status: number, code: string, message: string): Answer => ({
      status,
      body: { error: { status, code, message } },
    });
    if (r.method !== 'POST' || r.url.pathname !== '/v1/deliveries') return fail(404, '404', 'Not found');
    if (r.url.searchParams.get('accessToken') !== options.accessToken)
      return fail(403, '11003', 'Invalid access token');
    const b = r.body;
    if (!b || !isStringArray(b.targetUserIds)) return fail(400, '10002', 'Missing or invalid targetUserIds');
    const alert = b.notification?.alert;
    if (typeof alert?.text !== 'string' || !alert.text)
      return fail(400, '10002', 'notification.alert.text is required');
    const custom = await options.answer?.(r);
    if (custom) return custom;
    n += 1;
    sent.push({ targetUserIds: b.targetUserIds });
    await options.hold?.(r);
    return { status: 202, body: { success: true, notificationId: `wp-notif-${n}` } };
  });
  return { ...fake, sent };
}

// ---- OneSignal: POST /notifications, Authorization: Key <REST API key> ----

export async function startFakeOneSignal(options: {
  appId: string;
  restApiKey: string;
  /** External ids with a subscribed device; `all` for every id. */
  subscribedExternalIds: string[] | 'all';
  /**
   * Answers instead of OneSignal before anything is sent (a 429 with Retry-After, a 500...); a
   * promise holds the answer until it settles.
   */
  answer?: (r: Received) => Answer | undefined | Promise<Answer | undefined>;
  /** Called after a notification was created and before it is answered: a test may hold the answer. */
  hold?: (r: Received) => Promise<void> | undefined;
}) {
  let n = 0;
  // As OneSignal does, a repeated idempotency_key answers with the first request's answer and
  // creates nothing new; `sent` lists the notifications really created.
  const byKey = new Map<string, Answer>();
  const sent: { id: string; key: string | null; externalIds: string[] }[] = [];
  const subscribed = (id: string) =>
    options.subscribedExternalIds === 'all' || options.subscribedExternalIds.includes(id);
  const fake = await serve(async (r) => {
    if (r.method !== 'POST' || r.url.pathname !== '/notifications')
      return { status: 404, body: { errors: ['Not found'] } };
    if (r.headers.authorization !== `Key ${options.restApiKey}`) {
      return {
        status: 403,
        body: { errors: ["Access denied.  Please include an 'Authorization: ...' header with a valid API key"] },
      };
    }
    const b = r.body;
    if (!b || b.app_id !== options.appId)
      return {
        status: 400,
        body: { errors: ['app_id not found. You may be missing a Content-Type: application/json header.'] },
      };
    const ids = b.include_aliases?.external_id;
    if (!isStringArray(ids)) return { status: 400, body: { errors: ['include_aliases must carry external_id'] } };
    if (b.target_channel !== 'push')
      return { status: 400, body: { errors: ['target_channel is required when targeting aliases'] } };
    if (typeof b.contents?.en !== 'string')
      return { status: 400, body: { errors: ['Notification contents must have an English language entry'] } };
    const key = typeof b.idempotency_key === 'string' ? b.idempotency_key : null;
    const seen = key ? byKey.get(key) : undefined;
    if (seen) return seen;
    const custom = await options.answer?.(r);
    if (custom) return custom;
    let answer: Answer;
    if (!ids.some(subscribed)) {
      // OneSignal answers 200 with errors and an empty id when nobody can receive it.
      answer = { status: 200, body: { id: '', errors: ['All included players are not subscribed'] } };
    } else {
      n += 1;
      const id = `os-${n}-8f6c2e2a`;
      const invalid = ids.filter((x) => !subscribed(x));
      sent.push({ id, key, externalIds: ids.filter(subscribed) });
      answer = {
        status: 200,
        body:
          invalid.length > 0
            ? { id, errors: { invalid_aliases: { external_id: invalid } } }
            : { id, external_id: null },
      };
    }
    if (key) byKey.set(key, answer);
    await options.hold?.(r);
    return answer;
  });
  return { ...fake, sent };
}

// ---- Webhook receiver: checks X-Tally-Signature over the raw body ----

export interface WebhookBody {
  delivery_id: string;
  app_id: string;
  user_id: string;
  title: string;
  message: string;
  action_url: string | null;
  timestamp: number;
}

export async function startFakeWebhook(options: {
  secret: string;
  status?: number;
  /** Answers instead of the receiver, after the signature is checked (a 503, a 429...). */
  answer?: (r: Received) => Answer | undefined | Promise<Answer | undefined>;
}) {
  const verified: WebhookBody[] = [];
  // A well-behaved receiver delivers each Idempotency-Key once and answers a repeat as the first time.
  const delivered: WebhookBody[] = [];
  const byKey = new Map<string, Answer>();
  const fake = await serve(async (r) => {
    const expected = `sha256=${createHmac('sha256', options.secret).update(r.raw).digest('hex')}`;
    const got = String(r.headers['x-tally-signature'] ?? '');
    const ok = got.length === expected.length && timingSafeEqual(Buffer.from(got), Buffer.from(expected));
    if (!ok) return { status: 401, body: { error: 'bad signature' } };
    if (String(r.body?.timestamp) !== r.headers['x-tally-timestamp'])
      return { status: 400, body: { error: 'timestamp mismatch' } };
    verified.push(r.body);
    const key = typeof r.headers['idempotency-key'] === 'string' ? r.headers['idempotency-key'] : null;
    const seen = key ? byKey.get(key) : undefined;
    if (seen) return seen;
    const custom = await options.answer?.(r);
    if (custom) return custom;
    if (options.status && options.status >= 300) return { status: options.status, body: { error: 'receiver is down' } };
    delivered.push(r.body);
    const answer = { status: options.status ?? 200, body: { id: `wh-${verified.length}` } };
    if (key) byKey.set(key, answer);
    return answer;
  });
  return { ...fake, verified, delivered };
}

// ---- Web Push service ----

export interface FakeSubscription {
  id: string;
  endpoint: string;
  p256dh: string;
  auth: string;
}

export interface WebPushDelivery {
  subscriptionId: string;
  claims: VapidClaims;
  vapidPublicKey: string;
  headers: http.IncomingHttpHeaders;
  payload: { title: string; body: string; url: string | null; delivery_id: string };
}

export interface VapidClaims {
  aud: string;
  exp: number;
  sub: string;
}

const b64u = (b: Buffer) => b.toString('base64url');

/** Verifies `Authorization: vapid t=<jwt>, k=<key>` (ES256 over the key) and returns the claims. */
export function verifyVapid(header: string | undefined): { claims: VapidClaims; publicKey: string } {
  const m = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+),\s*k=([\w-]+)$/.exec(header ?? '');
  if (!m) throw new Error('Authorization is not "vapid t=..., k=..."');
  const [, jwt, k] = m as unknown as [string, string, string];
  const [h, p, s] = jwt.split('.') as [string, string, string];
  const head = JSON.parse(Buffer.from(h, 'base64url').toString());
  if (head.alg !== 'ES256') throw new Error(`JWT alg is ${head.alg}`);
  const point = Buffer.from(k, 'base64url');
  if (point.length !== 65 || point[0] !== 4) throw new Error('k is not an uncompressed P-256 point');
  const key = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: b64u(point.subarray(1, 33)), y: b64u(point.subarray(33)) },
    format: 'jwk',
  });
  const ok = verify(
    'sha256',
    Buffer.from(`${h}.${p}`),
    { key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(s, 'base64url'),
  );
  if (!ok) throw new Error('JWT signature does not verify with k');
  return { claims: JSON.parse(Buffer.from(p, 'base64url').toString()), publicKey: k };
}

/** RFC 8291 + RFC 8188: decrypts an aes128gcm Web Push body with the subscription's keys. */
export function decryptAes128gcm(body: Buffer, ecdh: ReturnType<typeof createECDH>, authSecret: Buffer): Buffer {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20]!;
  const asPublic = body.subarray(21, 21 + idlen);
  const records = body.subarray(21 + idlen);
  if (idlen !== 65) throw new Error(`keyid is ${idlen} bytes, expected the 65-byte sender key`);
  if (records.length > rs) throw new Error('more than one record');
  const uaPublic = ecdh.getPublicKey();
  const shared = ecdh.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]);
  const ikm = Buffer.from(hkdfSync('sha256', shared, authSecret, keyInfo, 32));
  const cek = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: aes128gcm\0'), 16));
  const nonce = Buffer.from(hkdfSync('sha256', ikm, salt, Buffer.from('Content-Encoding: nonce\0'), 12));
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(records.subarray(records.length - 16));
  const padded = Buffer.concat([decipher.update(records.subarray(0, records.length - 16)), decipher.final()]);
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end -= 1;
  if (padded[end] !== 2) throw new Error('last record lacks the 0x02 padding delimiter');
  return padded.subarray(0, end);
}

export async function startFakeWebPushService() {
  const subscriptions = new Map<string, { ecdh: ReturnType<typeof createECDH>; auth: Buffer; status: number }>();
  const deliveries: WebPushDelivery[] = [];
  const problems: string[] = [];
  let origin = '';
  const fake = await serve((r) => {
    const id = /^\/push\/([\w-]+)$/.exec(r.url.pathname)?.[1];
    const sub = id ? subscriptions.get(id) : undefined;
    if (r.method !== 'POST' || !sub || !id) return { status: 404 };
    try {
      const { claims, publicKey } = verifyVapid(r.headers.authorization);
      if (claims.aud !== origin) throw new Error(`aud is ${claims.aud}, expected ${origin}`);
      const now = Math.floor(Date.now() / 1000);
      if (!(claims.exp > now && claims.exp <= now + 24 * 3600)) throw new Error('exp is not within the next 24 hours');
      if (r.headers['content-encoding'] !== 'aes128gcm') throw new Error('Content-Encoding is not aes128gcm');
      if (!r.headers.ttl) throw new Error('TTL header missing');
      const payload = JSON.parse(decryptAes128gcm(r.raw, sub.ecdh, sub.auth).toString('utf8'));
      if (sub.status >= 300) return { status: sub.status };
      deliveries.push({ subscriptionId: id, claims, vapidPublicKey: publicKey, headers: r.headers, payload });
      return { status: sub.status, headers: { location: `${origin}/message/${id}-${deliveries.length}` } };
    } catch (err) {
      problems.push((err as Error).message);
      return { status: 400, body: { reason: (err as Error).message } };
    }
  });
  origin = fake.baseUrl;
  return {
    ...fake,
    deliveries,
    problems,
    /** A browser subscription (P-256 key pair and 16-byte auth secret) answering `status` (201 by default). */
    subscribe(status = 201): FakeSubscription {
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const auth = randomBytes(16);
      const id = randomBytes(6).toString('hex');
      subscriptions.set(id, { ecdh, auth, status });
      return { id, endpoint: `${origin}/push/${id}`, p256dh: b64u(ecdh.getPublicKey()), auth: b64u(auth) };
    },
  };
}
