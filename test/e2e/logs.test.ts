// What the server logs at LOG_LEVEL=trace, captured in process: requests carrying every kind of
// secret and user value (REST, MCP and admin credentials, METRICS_TOKEN, push provider secrets, an
// identity secret and user_hash values, users' and events' property values, SQL, a question in
// words, a provider's reply, bodies the validator refuses, a body that is not JSON) must leave
// none of them in any log line; each request has exactly one request line, with its operation id,
// app id, status and latency. And the error serializer on a database error that quotes values.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../server/src/logger.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { connectMcp } from '../helpers/mcp-client.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

const METRICS_TOKEN = 'metrics-MARKER-token-5d4c3b2a1f';
const SITE = 'https://shop.example';
/** Distinctive strings that must never appear in a log line, whatever the level. */
const MARK = {
  webhookSecret: 'whsec-MARKER-hook-9f8e7d6c',
  wonderpushToken: 'wp-MARKER-access-token-11aa22bb',
  onesignalKey: 'os-MARKER-rest-key-33cc44dd',
  userHash: 'c0ffee'.repeat(10).concat('beef'),
  userProperty: 'prop-MARKER-plan-7c1d',
  eventProperty: 'evprop-MARKER-sku-2b3c',
  sqlLiteral: 'sql-MARKER-literal-4e5f',
  sqlCast: 'sql-MARKER-cast-6a7b',
  question: 'nlq-MARKER-gold-8c9d',
  badField: 'badreq-MARKER-value-0e1f',
  badJson: 'json-MARKER-value-2a3b',
  providerReply: 'reply-MARKER-echo-4c5d',
  mcpArgument: 'mcp-MARKER-arg-6e7f',
};

const lines: string[] = [];
let server: TestServer;
let tenant: Tenant;
let identitySecret: string;
let refusingProvider: http.Server;

/** A push receiver that refuses everything and echoes a marker in its reply. */
async function startRefusingProvider(): Promise<string> {
  refusingProvider = http.createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(400, { 'content-type': 'application/json' }).end(`{"error":"${MARK.providerReply}"}`),
    );
  });
  await new Promise<void>((r) => refusingProvider.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(refusingProvider.address() as AddressInfo).port}`;
}

const requestLines = (requestId: string) =>
  lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request' && l.request_id === requestId);

async function waitForRequestLine(requestId: string) {
  for (let i = 0; i < 100 && requestLines(requestId).length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  return requestLines(requestId);
}

async function secretsAndValues(): Promise<void> {
  const admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
  const path = { app_id: tenant.app.id };
  const generated = await admin.adminIdentitySecretsGenerate({ path });
  expect(generated.error).toBeUndefined();
  identitySecret = generated.data!.secret;
  for (const body of [
    { provider: 'wonderpush' as const, access_token: MARK.wonderpushToken },
    {
      provider: 'onesignal' as const,
      onesignal_app_id: '5eb5a37e-b458-11e3-ac11-000c2940e62c',
      rest_api_key: MARK.onesignalKey,
    },
    {
      provider: 'webhook' as const,
      webhook_url: `${await startRefusingProvider()}/hook`,
      webhook_secret: MARK.webhookSecret,
    },
  ]) {
    expect((await admin.adminPushConfigure({ path, body })).error).toBeUndefined();
  }
  const c = tenant.client;
  expect(
    (await c.usersUpsert({ body: { user_id: 'log-u1', properties: { plan: MARK.userProperty } } })).error,
  ).toBeUndefined();
  const event = { event_name: 'bought', user_id: 'log-u1', properties: { sku: MARK.eventProperty } };
  expect((await c.eventsTrack({ body: event })).error).toBeUndefined();
  expect((await c.pushSend({ body: { user_id: 'log-u1', title: 'Hi', message: 'There' } })).response.status).toBe(502);
  const sql = (query: string) => c.analyticsQuery({ body: { app_id: tenant.app.id, query } });
  expect((await sql(`SELECT count(*) FROM events WHERE event_name = '${MARK.sqlLiteral}'`)).error).toBeUndefined();
  expect((await sql(`SELECT '${MARK.sqlCast}'::int AS n`)).error).toMatchObject({ code: 'QUERY_REJECTED' });
  await sql(`how many users have plan ${MARK.question}`);
  await admin.adminIdentitySecretsList({ path });
}

async function refusedRequests(): Promise<void> {
  const c = tenant.client;
  const bad = await c.eventsTrack({
    body: { event_name: 5, user_id: MARK.badField, properties: { v: MARK.badField }, nope: MARK.badField } as never,
  });
  expect(bad.response.status).toBe(400);
  const notJson = await fetch(`${server.url}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.apiKey}`, 'content-type': 'application/json' },
    body: `{"event_name": "x", "user_id": "${MARK.badJson}`,
  });
  expect(notJson.status).toBe(400);
  const web = server.clientFor();
  const headers = { Origin: SITE, 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0 Safari/537.36' };
  const forged = await web.websiteTrackEvent({
    body: { app_id: tenant.app.id, visitor_id: 'log-u1', event_name: 'forged', user_hash: MARK.userHash },
    headers,
  });
  expect(forged.response.status).toBe(403);
  const wrongKey = await createTallyClient({ baseUrl: server.url, apiKey: `${tenant.apiKey}x` }).eventsTrack({
    body: { event_name: 'e', user_id: 'u' },
  });
  expect(wrongKey.response.status).toBe(401);
  expect((await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status).toBe(
    200,
  );
}

beforeAll(async () => {
  server = await startTestServer(
    {
      LOG_LEVEL: 'trace',
      METRICS_TOKEN,
      SECRET_KEY: 'logs-test-secret-key-0123456789',
      PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1',
    },
    { logDestination: { write: (line: string) => void lines.push(line) } },
  );
  tenant = await server.createTenant();
  await updateApp(server.db.knex, tenant.app.id, { website_url: SITE });
  await secretsAndValues();
  await refusedRequests();
  const mcp = await connectMcp(server.url, tenant.mcpKey);
  await mcp.client.callTool({
    name: 'query_analytics',
    arguments: { app_id: tenant.app.id, query: `users with plan ${MARK.mcpArgument}` },
  });
  await mcp.client.close();
  await server.tally.context.ingestor.idle();
});
afterAll(async () => {
  await server?.close();
  refusingProvider?.close();
});

describe('logs at LOG_LEVEL=trace', () => {
  it('hold no credential, secret, user_hash, property value, SQL or refused value', async () => {
    await new Promise((r) => setTimeout(r, 100)); // the last request lines
    const all = lines.join('');
    expect(lines.length).toBeGreaterThan(20);
    // the log really covers what was sent: trace and debug lines, refusals, a push refusal
    expect(all).toContain('"msg":"push refused"');
    expect(all).toContain('"code":"QUERY_REJECTED"');
    const secrets = {
      apiKey: tenant.apiKey,
      mcpKey: tenant.mcpKey,
      admin: TEST_ADMIN_TOKEN,
      METRICS_TOKEN,
      identitySecret,
    };
    for (const [what, marker] of Object.entries({ ...MARK, ...secrets })) {
      expect(all.includes(marker), `${what} (${marker}) appears in the log`).toBe(false);
    }
    expect(all).not.toMatch(/MARKER/);
  });

  it('writes exactly one line per request, with operation id, app id, status and latency', async () => {
    const requestId = 'log-test-request-1';
    const { response } = await tenant.client.eventsTrack({
      body: { event_name: 'traced', user_id: 'log-u2' },
      headers: { 'X-Request-Id': requestId },
    });
    expect(response.status).toBe(200);
    const found = await waitForRequestLine(requestId);
    expect(found).toEqual([
      expect.objectContaining({
        level: 30,
        request_id: requestId,
        operation: 'Events_track',
        method: 'POST',
        app_id: tenant.app.id,
        status: 200,
        duration_ms: expect.any(Number),
      }),
    ]);
    expect(Object.keys(found[0]).sort()).toEqual(
      [
        'app_id',
        'duration_ms',
        'level',
        'method',
        'msg',
        'operation',
        'request_id',
        'service',
        'status',
        'time',
      ].sort(),
    );
    // a refused request has its line too, without an app it never reached
    const refused = 'log-test-request-2';
    await fetch(`${server.url}/v1/events`, { method: 'POST', headers: { 'X-Request-Id': refused } });
    expect(await waitForRequestLine(refused)).toEqual([
      expect.objectContaining({ operation: 'Events_track', status: 401, duration_ms: expect.any(Number) }),
    ]);
    expect(requestLines(refused)[0].app_id).toBeUndefined();
  });

  it('logs a database error by its codes and structure, without the values it quotes', () => {
    const out: string[] = [];
    const logger = createLogger('trace', { write: (l: string) => void out.push(l) });
    const err = Object.assign(
      new Error(
        `insert into "users" ("external_id") values ($1) - invalid input syntax for type integer: "${MARK.userProperty}"`,
      ),
      {
        code: '22P02',
        severity: 'ERROR',
        detail: `Key (plan)=(${MARK.userProperty}) already exists.`,
        where: MARK.sqlLiteral,
      },
    );
    logger.error({ err, user_hash: MARK.userHash, secrets: { a: MARK.webhookSecret } }, 'request failed');
    const [line] = out.map((l) => JSON.parse(l));
    expect(line.err).toMatchObject({ type: 'Error', code: '22P02', severity: 'ERROR' });
    expect(line.err.message).toContain('invalid input syntax for type integer');
    expect(line.err.stack).toMatch(/^\s+at /);
    expect(out.join('')).not.toMatch(/MARKER|c0ffee/);
  });
});
