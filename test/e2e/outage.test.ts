// A database outage is 503 SERVICE_UNAVAILABLE (with Retry-After) on every surface, never 401
// MISSING_AUTH for a valid key nor 500: a server started against a closed port, and a running
// server whose database goes away (on PostgreSQL the database is dropped; embedded, the pool is
// closed).
import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTallyClient } from '@tally/client';
import knexModule from 'knex';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createApp } from '../../server/src/app.js';
import { loadConfig } from '../../server/src/config.js';
import { createLogger } from '../../server/src/logger.js';
import { type Database, openDatabase } from '../../server/src/storage/db.js';
import { updateApp } from '../../server/src/storage/tenancy.js';
import { createTally, type Tally } from '../../server/src/tally.js';
import { openTestDatabase, startTestServer, TEST_ADMIN_TOKEN } from '../helpers/server.js';

const SITE = 'https://shop.example';

/** A fetch Response, or a client call's result (whose body the client has read already). */
async function expectUnavailable(res: Response | { response: Response; error?: unknown }, what: string) {
  const response = res instanceof Response ? res : res.response;
  const body = res instanceof Response ? await res.json() : res.error;
  expect(response.status, what).toBe(503);
  expect(Number(response.headers.get('retry-after')), what).toBeGreaterThan(0);
  expect(body, what).toMatchObject({
    success: false,
    error: 'Service Unavailable',
    code: 'SERVICE_UNAVAILABLE',
    message: expect.stringContaining('database'),
  });
}

describe('a server whose database cannot be reached (closed port)', () => {
  let server: Server;
  let url: string;
  let database: Database;
  let tally: Tally;

  beforeAll(async () => {
    const knex = knexModule({
      client: 'pg',
      connection: 'postgres://postgres@127.0.0.1:1/tally',
      pool: { min: 0, max: 2 },
      acquireConnectionTimeout: 3_000,
      log: { warn() {}, error() {}, debug() {}, deprecate() {} }, // the refused connections are expected
    });
    database = { knex, kind: 'postgres', url: 'postgres://postgres@127.0.0.1:1/tally', close: () => knex.destroy() };
    const config = loadConfig({
      NODE_ENV: 'test',
      RATE_LIMITS: 'off',
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    });
    tally = await createTally(config, { logger: createLogger('silent'), database });
    const app = createApp(tally);
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => server?.close(() => r()));
    await tally?.close();
    await database?.close();
  });

  it('answers 503 for a key it cannot check, on REST, MCP, admin and website endpoints', async () => {
    const rest = createTallyClient({ baseUrl: url, apiKey: 'tk_live_cannot-be-checked' });
    const track = await rest.eventsTrack({ body: { event_name: 'e', user_id: 'u' } });
    await expectUnavailable(track, 'REST');
    await expectUnavailable(await fetch(`${url}/mcp/auth`, { headers: { 'x-mcp-api-key': 'tk_mcp_x' } }), 'MCP GET');
    const admin = createTallyClient({ baseUrl: url, adminToken: TEST_ADMIN_TOKEN });
    await expectUnavailable(await admin.adminOrganizationsList(), 'admin');
    const config = await fetch(`${url}/v1/website/config?app_id=0190f0f0-0000-7000-8000-000000000000`, {
      headers: { Origin: SITE },
    });
    await expectUnavailable(config, 'website');
    const jsonRpc = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'x-mcp-api-key': 'tk_mcp_x', 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    });
    expect(jsonRpc.status).toBe(503);
    expect(await jsonRpc.json()).toMatchObject({ jsonrpc: '2.0', error: { data: { code: 'SERVICE_UNAVAILABLE' } } });
    expect((await fetch(`${url}/readyz`)).status).toBe(503);
  });

  it('still answers 401 to a request without any credential (no database needed to say so)', async () => {
    const res = await fetch(`${url}/v1/events`, { method: 'POST' });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ code: 'MISSING_AUTH' });
  });
});

describe('a running server whose database goes away', () => {
  it('answers 503 to a valid key, cached or not, and to the website endpoints', async () => {
    const target = inject('database');
    let database: Database;
    let drop: (() => Promise<void>) | undefined;
    let cleanup: (() => Promise<void>) | undefined;
    if (target.kind === 'postgres') {
      // A database of its own, dropped under the server's feet.
      const name = `tally_outage_${randomBytes(4).toString('hex')}`;
      const admin = knexModule({ client: 'pg', connection: target.url, pool: { min: 0, max: 1 } });
      await admin.raw(`create database ${name}`);
      const own = new URL(target.url);
      own.pathname = `/${name}`;
      database = await openDatabase({ databaseUrl: own.toString() });
      drop = async () => {
        await admin.raw(`drop database ${name} with (force)`);
      };
      cleanup = async () => {
        await admin.raw(`drop database if exists ${name} with (force)`);
        await admin.destroy();
      };
    } else {
      // The embedded database lives in this process; its connection pool is what can go away.
      database = await openTestDatabase();
      drop = async () => {
        await database.knex.destroy();
      };
    }
    const server = await startTestServer({}, { database });
    try {
      const used = await server.createTenant();
      const unused = await server.createTenant();
      await updateApp(database.knex, used.app.id, { website_url: SITE });
      expect((await used.client.eventsTrack({ body: { event_name: 'e', user_id: 'u' } })).response.status).toBe(200);

      await drop();

      const cached = await used.client.eventsTrack({ body: { event_name: 'e', user_id: 'u' } });
      await expectUnavailable(cached, 'a key checked before the outage');
      const fresh = await unused.client.usersUpsert({ body: { user_id: 'u' } });
      await expectUnavailable(fresh, 'a key not checked before the outage');
      const web = await server.clientFor().websiteConfig({ query: { app_id: used.app.id }, headers: { Origin: SITE } });
      await expectUnavailable(web, 'website');
    } finally {
      await server.close().catch(() => {});
      await database.close().catch(() => {});
      await cleanup?.();
    }
  });
});
