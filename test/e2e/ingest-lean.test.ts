// The lean ingestion path (http/ingest-listener.ts) against the Express app: the same requests,
// valid and invalid, sent to a server with the lean path and to one without (LEAN_INGESTION=off)
// on the same database, get the same status, body and headers (Date aside; a success's event_id
// aside). Each case also states the status it must get, so a case
// that stopped testing what it names fails. Open-ended inputs come from fast-check.
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

let lean: TestServer;
let full: TestServer;
let tenant: Tenant;
let revoked: Tenant;

beforeAll(async () => {
  lean = await startTestServer();
  full = await startTestServer({ LEAN_INGESTION: 'off' }, { database: lean.db });
  tenant = await lean.createTenant();
  revoked = await lean.createTenant();
  const admin = { authorization: `Bearer ${lean.config.adminToken}` };
  const done = await fetch(`${lean.url}/admin/v1/keys/${revoked.apiKeyId}`, { method: 'DELETE', headers: admin });
  expect(done.status).toBe(200);
});
afterAll(async () => {
  await full?.close();
  await lean?.close();
});

interface Request {
  method?: string;
  path?: string;
  /** Raw body text (or bytes); JSON bodies are given already stringified. */
  body?: string | Uint8Array | (() => ReadableStream<Uint8Array>);
  headers?: Record<string, string>;
  /** Leave out the Authorization header. */
  noKey?: boolean;
  key?: () => string;
}

interface Seen {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

let sequence = 0;

async function send(server: TestServer, r: Request): Promise<Seen> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-request-id': `diff-${++sequence}`,
    ...(r.noKey ? {} : { authorization: `Bearer ${r.key ? r.key() : tenant.apiKey}` }),
    ...r.headers,
  };
  const body = typeof r.body === 'function' ? r.body() : r.body;
  const res = await fetch(server.url + (r.path ?? '/v1/events'), {
    method: r.method ?? 'POST',
    headers,
    body,
    ...(typeof r.body === 'function' ? { duplex: 'half' } : {}),
  } as RequestInit);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: compared as text
  }
  const seen: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== 'date') seen[name] = value;
  });
  // A success names the event stored, which differs between two sends.
  if (parsed && typeof parsed === 'object' && 'event_id' in parsed) parsed = { ...parsed, event_id: '<event id>' };
  return { status: res.status, headers: seen, body: parsed };
}

/** Sends the request to both servers (each with its own request id, then compared as one). */
async function both(r: Request): Promise<Seen> {
  const [a, b] = [await send(lean, r), await send(full, r)];
  a.headers['x-request-id'] = b.headers['x-request-id'] = '<request id>';
  expect(a).toEqual(b);
  return a;
}

const event = (fields: Record<string, unknown> = {}) => JSON.stringify({ event_name: 'e', user_id: 'u', ...fields });
const batch = (events: unknown[]) => JSON.stringify({ events });
const nested = (levels: number) => {
  let v: Record<string, unknown> = { leaf: 1 };
  for (let i = 1; i < levels; i++) v = { a: v };
  return v;
};

const CASES: [string, number, Request][] = [
  ['a valid event', 200, { body: event({ properties: { plan: 'pro', price: 9.99 } }) }],
  ['a valid batch', 200, { path: '/v1/events/batch', body: batch([{ event_name: 'a', user_id: 'u' }]) }],
  ['a valid event with a BOM', 200, { body: `\ufeff${event()}` }],
  [
    'a valid event, charset=utf-8',
    200,
    { body: event(), headers: { 'content-type': 'application/json; charset=utf-8' } },
  ],
  ['bad JSON', 400, { body: '{"event_name": "e",' }],
  ['JSON that is not an object or array', 400, { body: '"text"' }],
  ['a body of spaces', 400, { body: '   ' }],
  ['an empty body', 400, { body: '' }],
  ['an array body', 400, { body: '[]' }],
  ['wrong content type', 400, { body: event(), headers: { 'content-type': 'text/plain' } }],
  ['another charset', 400, { body: event(), headers: { 'content-type': 'application/json; charset=latin1' } }],
  ['no body at all', 400, { body: undefined }],
  ['event_name a number', 400, { body: event({ event_name: 5 }) }],
  ['properties an array', 400, { body: event({ properties: [1] }) }],
  ['user_id missing', 400, { body: JSON.stringify({ event_name: 'e' }) }],
  ['an unknown field', 400, { body: event({ colour: 'red' }) }],
  ['app_id in the body', 400, { body: event({ app_id: '01938f2a-7c4e-7d1a-9b1e-3f6a2c8d4e5f' }) }],
  ['app_id in the query', 400, { path: '/v1/events?app_id=01938f2a-7c4e-7d1a-9b1e-3f6a2c8d4e5f', body: event() }],
  [
    '101 events in a batch',
    400,
    { path: '/v1/events/batch', body: batch(Array(101).fill({ event_name: 'a', user_id: 'u' })) },
  ],
  ['an empty batch', 400, { path: '/v1/events/batch', body: batch([]) }],
  [
    'one bad event of a batch',
    400,
    {
      path: '/v1/events/batch',
      body: batch([
        { event_name: 'a', user_id: 'u' },
        { event_name: 'a', user_id: 'null' },
      ]),
    },
  ],
  ['a NUL byte', 400, { body: event({ event_name: 'a\u0000b' }) }],
  ['a lone surrogate', 400, { body: '{"event_name": "e", "user_id": "\\ud800"}' }],
  [
    'a lone surrogate in a property name',
    400,
    { body: '{"event_name": "e", "user_id": "u", "properties": {"\\udc00": 1}}' },
  ],
  ['a number that overflows', 400, { body: '{"event_name": "e", "user_id": "u", "properties": {"x": 1e999}}' }],
  ['nesting 40 levels deep', 400, { body: event({ properties: nested(40) }) }],
  [
    'nesting 5,000 levels deep',
    400,
    { body: `{"event_name":"e","user_id":"u","properties":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}` },
  ],
  [
    '256 keys of properties',
    400,
    { body: event({ properties: Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`k${i}`, i])) }) },
  ],
  ['an event_name of 256 characters', 400, { body: event({ event_name: 'x'.repeat(256) }) }],
  ['a user_id of 256 emoji', 400, { body: event({ user_id: '😀'.repeat(256) }) }],
  ['a placeholder user_id', 400, { body: event({ user_id: 'undefined' }) }],
  ['a date that does not exist', 400, { body: event({ timestamp: '2026-02-30T10:00:00Z' }) }],
  ['a time without a zone', 400, { body: event({ timestamp: '2026-02-03T10:00:00' }) }],
  ['a time far in the future', 400, { body: event({ timestamp: '2999-01-01T00:00:00Z' }) }],
  ['a body over 1 MB', 413, { body: event({ properties: { big: 'x'.repeat(1_100_000) } }) }],
  ['a chunked body over 1 MB', 413, { body: () => chunks(event({ properties: { big: 'x'.repeat(1_100_000) } })) }],
  ['a chunked valid body', 200, { body: () => chunks(event()) }],
  ['a gzipped body', 200, { body: new Uint8Array(gzipSync(event())), headers: { 'content-encoding': 'gzip' } }],
  ['gzip that is not gzip', 400, { body: event(), headers: { 'content-encoding': 'gzip' } }],
  ['no key', 401, { body: event(), noKey: true }],
  ['a Basic credential', 401, { body: event(), headers: { authorization: 'Basic dXNlcjpwYXNz' } }],
  ['Bearer without a key', 401, { body: event(), headers: { authorization: 'Bearer ' } }],
  ['a key that does not exist', 401, { body: event(), key: () => 'tk_live_not-a-key-at-all' }],
  ['a revoked key', 401, { body: event(), key: () => revoked.apiKey }],
  ['an MCP key', 401, { body: event(), key: () => tenant.mcpKey }],
  ['the admin token', 401, { body: event(), key: () => lean.config.adminToken! }],
  ['no key and a bad body', 400, { body: '{', noKey: true }],
  ['no key and a bad field', 401, { body: event({ event_name: 5 }), noKey: true }],
  ['GET', 405, { method: 'GET', body: undefined }],
  ['PUT', 405, { method: 'PUT', body: event() }],
  ['a trailing slash', 200, { path: '/v1/events/', body: event() }],
];

function chunks(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(at, at + 64 * 1024));
      at += 64 * 1024;
    },
  });
}

describe('the lean path answers as the Express app does', () => {
  it.each(CASES)('%s (%i)', async (_name, status, request) => {
    const seen = await both(request);
    expect(seen.status).toBe(status);
    if (status >= 400) expect(seen.body).toMatchObject({ success: false });
  });

  it('a retried insert_id is a duplicate on both paths', async () => {
    const id = `retry-${Date.now()}`;
    await send(lean, { body: event({ insert_id: `${id}-lean` }) });
    await send(full, { body: event({ insert_id: `${id}-full` }) });
    const lean2 = await send(lean, { body: event({ insert_id: `${id}-lean` }) });
    const full2 = await send(full, { body: event({ insert_id: `${id}-full` }) });
    lean2.headers['x-request-id'] = full2.headers['x-request-id'] = '';
    expect(lean2).toEqual(full2);
    expect(lean2.body).toMatchObject({ duplicate: true });
  });

  it('arbitrary JSON bodies', async () => {
    const field = fc.oneof(fc.string({ maxLength: 300 }), fc.integer(), fc.constant(null), fc.boolean());
    const body = fc.oneof(
      fc.jsonValue(),
      fc.record(
        { event_name: field, user_id: field, properties: fc.jsonValue(), timestamp: field, insert_id: field },
        { requiredKeys: [] },
      ),
    );
    await fc.assert(
      fc.asyncProperty(body, fc.boolean(), async (value, isBatch) => {
        const text = isBatch ? batch([value]) : JSON.stringify(value);
        const seen = await both({ path: isBatch ? '/v1/events/batch' : '/v1/events', body: text });
        expect(seen.status).not.toBe(500);
      }),
      { numRuns: 40 },
    );
  });

  it('arbitrary text bodies, lone surrogates included', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 200 }), async (text) => {
        const seen = await both({ body: text });
        expect(seen.status).not.toBe(500);
      }),
      { numRuns: 40 },
    );
  });
});

describe('rate limits on both paths', () => {
  let leanLimited: TestServer;
  let fullLimited: TestServer;

  beforeAll(async () => {
    const env = { RATE_LIMITS: JSON.stringify({ events: 2, batch: 1, auth_failures: 2 }) };
    leanLimited = await startTestServer(env, { database: lean.db });
    fullLimited = await startTestServer({ ...env, LEAN_INGESTION: 'off' }, { database: lean.db });
  });
  afterAll(async () => {
    await fullLimited?.close();
    await leanLimited?.close();
  });

  async function limited(r: Request): Promise<Seen> {
    const [a, b] = [await send(leanLimited, r), await send(fullLimited, r)];
    a.headers['x-request-id'] = b.headers['x-request-id'] = '<request id>';
    // the window's end is the same second on both, unless a second passed between the two sends
    for (const h of ['x-ratelimit-reset', 'retry-after']) {
      if (a.headers[h] !== undefined && b.headers[h] !== undefined) {
        expect(Math.abs(Number(a.headers[h]) - Number(b.headers[h]))).toBeLessThanOrEqual(1);
        a.headers[h] = b.headers[h] = '<window>';
      }
    }
    // ...and so is the body's retry_after (seconds to the window's end)
    const details = (seen: Seen) => (seen.body as { details?: { retry_after?: number } } | null)?.details;
    const [da, db] = [details(a), details(b)];
    if (typeof da?.retry_after === 'number' && typeof db?.retry_after === 'number') {
      expect(Math.abs(da.retry_after - db.retry_after)).toBeLessThanOrEqual(1);
      da.retry_after = db.retry_after = 0;
    }
    expect(a).toEqual(b);
    return a;
  }

  it('over the per-minute limit of a key: 429 with the same headers', async () => {
    const t = await leanLimited.createTenant();
    const r = { body: event(), key: () => t.apiKey };
    expect((await limited(r)).status).toBe(200);
    expect((await limited(r)).status).toBe(200);
    const refused = await limited(r);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
    expect(refused.headers['x-ratelimit-remaining']).toBe('0');
  });

  it('too many failed authentications from an address: 429 before the key is looked up', async () => {
    const t = await leanLimited.createTenant();
    const bad = { body: event(), key: () => 'tk_live_wrong-key-for-the-throttle' };
    expect((await limited(bad)).status).toBe(401);
    expect((await limited(bad)).status).toBe(401);
    const refused = await limited({ body: event(), key: () => t.apiKey });
    expect(refused.status).toBe(429);
  });
});
