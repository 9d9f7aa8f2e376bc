// Shared set-up of the campaign tests: a server with a clock the test moves, an admin client,
// a local WonderPush (many recipients per call) and webhook receivers, and helpers that run the
// campaign jobs and read what was sent.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTallyClient, type TallyClient } from '@tally/client';
import { expect } from 'vitest';
import { CAMPAIGN_TICK, CAMPAIGN_TRIGGERS } from '../../server/src/jobs/index.js';
import type { Database } from '../../server/src/storage/db.js';
import { SECRET_KEY, WP_TOKEN } from './push-setup.js';
import { startTestServer, type Tenant, type TestServer } from './server.js';

export interface Clocked {
  server: TestServer;
  admin: TallyClient;
  set(at: string | Date): void;
  advance(ms: number): void;
  now(): Date;
}

/**
 * A server with campaign workers, on a clock that moves with real time from wherever the test sets
 * it. Servers of a run share the PostgreSQL job queue: a second file with campaign workers gives
 * its server a queue of its own (`jobSchema`), so neither takes the other's runs on its own clock,
 * or a database of its own (`database`, its close() left to the caller), so neither runs the other's
 * campaigns and trigger occurrences either.
 */
export async function startClockedServer(
  start: string,
  env: Record<string, string> = {},
  options: { jobSchema?: string; database?: Database } = {},
): Promise<Clocked> {
  let offset = new Date(start).getTime() - Date.now();
  const now = () => new Date(Date.now() + offset);
  const server = await startTestServer(
    { SECRET_KEY, PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1', CAMPAIGN_WORKERS: 'on', ...env },
    // only the campaign jobs: the others (dedup purge...) would run on this moved clock
    {
      clock: now,
      jobs: (name) => name.startsWith('campaign-'),
      jobSchema: options.jobSchema,
      database: options.database,
    },
  );
  return {
    server,
    admin: createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken }),
    set(at) {
      offset = new Date(at).getTime() - Date.now();
    },
    advance(ms) {
      offset += ms;
    },
    now,
  };
}

/** Queues one run of a job and waits until it is done. */
export async function runJob(server: TestServer, name: string): Promise<void> {
  const id = await server.jobs.runNow(name);
  for (let i = 0; i < 600; i++) {
    const state = await server.jobs.state(name, id);
    if (state === 'completed') return;
    if (state === 'failed') throw new Error(`job ${name} failed`);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`job ${name} did not finish`);
}

/**
 * Waits until no campaign job is queued or running and no send is in flight: the minute schedule
 * may have started a run of its own at the same moment as the test's.
 */
async function settle(c: Clocked): Promise<void> {
  const knex = c.server.db.knex;
  for (let i = 0; i < 600; i++) {
    const { rows } = await knex.raw(
      `select (select count(*) from ${c.server.jobs.schema}.job where name in (?, ?) and state in ('created', 'active', 'retry')
                 and start_after <= now()) as jobs,
              (select count(*) from campaign_sends where status = 'sending') as sending`,
      [CAMPAIGN_TICK, CAMPAIGN_TRIGGERS],
    );
    if (Number(rows[0].jobs) === 0 && Number(rows[0].sending) === 0) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One run of the campaign scheduler (due campaigns, triggers, queued sends), awaited. */
export async function tick(c: Clocked): Promise<void> {
  await runJob(c.server, CAMPAIGN_TICK);
  await settle(c);
}

/** One run of the trigger worker, awaited. */
export async function drainTriggers(c: Clocked): Promise<void> {
  await runJob(c.server, CAMPAIGN_TRIGGERS);
  await settle(c);
}

/** A WonderPush-speaking server recording each call's target users and text. */
export async function wonderPush() {
  const calls: { users: string[]; text: string; title: string; url?: string }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname !== '/v1/deliveries' || url.searchParams.get('accessToken') !== WP_TOKEN) {
        res.writeHead(403, { 'content-type': 'application/json' }).end('{"error":{"status":403}}');
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      calls.push({
        users: body.targetUserIds,
        text: body.notification.alert.text,
        title: body.notification.alert.title,
        url: body.notification.targetUrl,
      });
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ success: true, notificationId: `wp-${calls.length}` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl,
    calls,
    /** Every user id reached so far, in call order. */
    reached: () => calls.flatMap((c) => c.users),
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

export async function useWonderPush(c: Clocked, tenant: Tenant, baseUrl: string) {
  const { error } = await c.admin.adminPushConfigure({
    path: { app_id: tenant.app.id },
    body: { provider: 'wonderpush', access_token: WP_TOKEN, base_url: baseUrl },
  });
  expect(error).toBeUndefined();
}

export async function addUsers(tenant: Tenant, users: { id: string; properties?: Record<string, unknown> }[]) {
  for (const u of users) {
    const { error } = await tenant.client.usersUpsert({ body: { user_id: u.id, properties: u.properties } });
    expect(error).toBeUndefined();
  }
}

export async function createCampaign(c: Clocked, appId: string, body: Record<string, unknown>) {
  const result = await c.admin.adminCampaignsCreate({
    path: { app_id: appId },
    // biome-ignore lint/suspicious/noExplicitAny: bodies built per test, checked by the server
    body: { name: 'c', title: 'Hello', message: 'Hi {{first_name}}', ...body } as any,
  });
  expect(result.error).toBeUndefined();
  return result.data!;
}

export async function detail(c: Clocked, id: string) {
  const { data, error } = await c.admin.adminCampaignsGet({ path: { campaign_id: id } });
  expect(error).toBeUndefined();
  return data!;
}

/** A webhook receiver that accepts every push except those for the user `refuse` (422: a permanent refusal). */
export async function refusingReceiver(refuse: string) {
  const seen: { user_id: string; action_url: string | null; delivery_id: string }[] = [];
  const s = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      seen.push(body);
      res.writeHead(body.user_id === refuse ? 422 : 200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`,
    seen,
    close: () => new Promise<void>((r) => s.close(() => r())),
  };
}
