// The Idempotency-Key value and the lease of a running key, over HTTP against a started server:
// every key that is not 1 to 255 printable ASCII characters (empty, too long, NUL and other control
// bytes, non-ASCII) is refused with 400 in the error envelope, whether Node's HTTP parser or the
// contract's validator catches it, and nothing runs; a key whose request died with its process
// (a `running` row past its lease) is taken over by the next request with the same body.
import net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintOf, LEASE_MS } from '../../server/src/idempotency/idempotency.js';
import { uuidv7 } from '../../server/src/ids.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let server: TestServer;
let now = Date.now();

beforeAll(async () => {
  server = await startTestServer({}, { clock: () => new Date(now), jobs: () => false });
});
afterAll(() => server?.close());

const keys = () => server.db.knex('idempotency_keys');

async function post(path: string, apiKey: string, body: unknown, key?: string) {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: an answer of any operation, checked field by field
  return { status: res.status, headers: res.headers, text, json: JSON.parse(text) as any };
}

/** Sends a POST /v1/users with these raw bytes as the Idempotency-Key value; resolves with the status and body. */
function rawPost(apiKey: string, keyBytes: Buffer): Promise<{ status: number; body: string }> {
  const url = new URL(server.url);
  const body = Buffer.from(JSON.stringify({ user_id: 'hostile' }));
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), body: rest.join('\r\n\r\n') });
    });
    socket.write(
      Buffer.concat([
        Buffer.from(
          `POST /v1/users HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\nIdempotency-Key: `,
        ),
        keyBytes,
        Buffer.from('\r\n\r\n'),
        body,
      ]),
    );
  });
}

describe('hostile keys', () => {
  it('refuses every key that is not 1 to 255 printable ASCII characters with 400 in the envelope', async () => {
    const tenant = await server.createTenant();
    const valid = /^[!-~]{1,255}$/;
    // What the server sees: HTTP drops the spaces and tabs around a header value.
    const seen = (s: string) => s.replace(/^[ \t]+|[ \t]+$/g, '');
    const hostile = fc
      .oneof(
        fc.string({ unit: 'binary', maxLength: 300 }),
        fc.string({
          unit: fc.constantFrom('a', '\u0000', '\u00e9', '\u0007', ' ', '\u007f', '\ud83d\ude00'),
          maxLength: 20,
        }),
        fc.string({ unit: fc.constantFrom('k', '-'), minLength: 256, maxLength: 400 }),
        fc.constant(''),
      )
      .filter((s) => !/[\r\n]/.test(s) && !valid.test(seen(s)));
    await fc.assert(
      fc.asyncProperty(hostile, async (value) => {
        const answer = await rawPost(tenant.apiKey, Buffer.from(value, 'utf8'));
        expect(answer.status).toBe(400);
        expect(JSON.parse(answer.body)).toMatchObject({
          success: false,
          error: 'Bad Request',
          code: 'INVALID_REQUEST',
        });
      }),
      { numRuns: 40 },
    );
    // Nothing was run or remembered.
    expect(await keys().where({ app_id: tenant.app.id })).toHaveLength(0);
    expect(await server.db.knex('users').where({ app_id: tenant.app.id })).toHaveLength(0);
    // The edge of the format is accepted: 255 characters, every printable one.
    const longest = `${'k'.repeat(200)}!"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`;
    expect((await rawPost(tenant.apiKey, Buffer.from(longest.slice(0, 255)))).status).toBe(200);
  });

  it('says which header was wrong', async () => {
    const tenant = await server.createTenant();
    const answer = await post('/v1/users', tenant.apiKey, { user_id: 'x' }, 'k'.repeat(256));
    expect(answer.status).toBe(400);
    expect(answer.json.details.errors[0].path).toBe('/headers/idempotency-key');
  });
});

describe('the lease of a running key', () => {
  it('refuses a repeat while the lease runs, and lets the next request take over once it has ended', async () => {
    const tenant = await server.createTenant();
    const body = { user_id: 'crashed', email: 'c@example.com' };
    // What a request leaves behind when its process dies before answering: a running row.
    const at = new Date(now);
    await keys().insert({
      app_id: tenant.app.id,
      api_key_id: tenant.apiKeyId,
      operation: 'Users_upsert',
      key: 'crash-1',
      fingerprint: fingerprintOf(body),
      run_id: uuidv7(),
      state: 'running',
      lease_until: new Date(at.getTime() + LEASE_MS),
      created_at: at,
      expires_at: new Date(at.getTime() + 86_400_000),
    });
    const during = await post('/v1/users', tenant.apiKey, body, 'crash-1');
    expect(during.status).toBe(409);
    expect(during.headers.get('retry-after')).toBe('1');
    expect(during.json.code).toBe('CONFLICT');
    // Another body is still refused as a reuse, lease or not.
    now += LEASE_MS + 1000;
    expect((await post('/v1/users', tenant.apiKey, { user_id: 'other' }, 'crash-1')).json.code).toBe(
      'IDEMPOTENCY_KEY_REUSED',
    );
    const after = await post('/v1/users', tenant.apiKey, body, 'crash-1');
    expect(after.status).toBe(200);
    expect(after.headers.get('idempotent-replayed')).toBeNull();
    expect(await keys().where({ app_id: tenant.app.id, key: 'crash-1' }).first()).toMatchObject({
      state: 'done',
      status: 200,
    });
    expect((await post('/v1/users', tenant.apiKey, body, 'crash-1')).text).toBe(after.text);
  });
});

describe('requests that race for one key', () => {
  it('let exactly one of them run; the others are refused while it runs or get its answer', async () => {
    const tenant = await server.createTenant();
    await post('/v1/users', tenant.apiKey, { user_id: 'racer' });
    const body = { user_id: 'racer', alias_id: 'racer-alias' };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => post('/v1/users/aliases', tenant.apiKey, body, 'race-1')),
    );
    const ran = answers.filter((a) => a.status === 200 && a.headers.get('idempotent-replayed') === null);
    expect(ran).toHaveLength(1);
    for (const answer of answers) {
      if (answer.status === 200) expect(answer.text).toBe(ran[0]!.text);
      else {
        expect(answer.status).toBe(409);
        expect(answer.json).toMatchObject({ code: 'CONFLICT', details: { reason: 'idempotency_key_in_use' } });
        expect(answer.headers.get('retry-after')).toBe('1');
      }
    }
    expect(await keys().where({ app_id: tenant.app.id, key: 'race-1' })).toHaveLength(1);
  });
});
