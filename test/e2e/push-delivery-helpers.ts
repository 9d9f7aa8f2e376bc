// What push-delivery.test.ts and push-delivery-records.test.ts share: the server (one per file, set
// up by setUpDeliveryServer, with the delivery worker's job only), tenants with a provider and
// users, and a /sendpush call. `server` and `admin` are live bindings, set by the set-up.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, expect } from 'vitest';
import { PUSH_SWEEP } from '../../server/src/jobs/index.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { OS_APP, OS_KEY, SECRET_KEY, WP_TOKEN } from '../helpers/push-setup.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

export let server: TestServer;
export let admin: TallyClient;

/**
 * Starts the server before the file's tests and stops it after: it works the delivery worker's
 * queue only (no campaign jobs), on `clock` when given. `ownDatabase` (a name prefix) puts it on a
 * database of its own: on PostgreSQL, two servers with the delivery worker on one database would
 * take each other's runs on their own clocks (the embedded database is a copy per file anyway).
 */
export function setUpDeliveryServer(options: { clock?: () => Date; ownDatabase?: string } = {}): void {
  let own: Awaited<ReturnType<typeof openOwnDatabase>> | undefined;
  beforeAll(async () => {
    if (options.ownDatabase) own = await openOwnDatabase(options.ownDatabase);
    server = await startTestServer(
      { SECRET_KEY, PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1', CAMPAIGN_WORKERS: 'on' },
      { jobs: (name) => name === PUSH_SWEEP, clock: options.clock, database: own?.database },
    );
    admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
  });
  afterAll(async () => {
    await server?.close();
    await own?.close();
  });
}

export const db = () => server.db.knex;
export const delivery = (id: string) => db()('push_deliveries').where({ id }).first();

/** A tenant pushing through `provider`, with these users. */
export async function tenantWith(
  provider: Parameters<TallyClient['adminPushConfigure']>[0]['body'],
  ...users: string[]
) {
  const tenant = await server.createTenant();
  for (const id of users) expect((await tenant.client.usersUpsert({ body: { user_id: id } })).error).toBeUndefined();
  const { error } = await admin.adminPushConfigure({ path: { app_id: tenant.app.id }, body: provider });
  expect(error).toBeUndefined();
  return tenant;
}

export const oneSignal = (baseUrl: string) =>
  ({ provider: 'onesignal', onesignal_app_id: OS_APP, rest_api_key: OS_KEY, base_url: baseUrl }) as const;
export const wonderPush = (baseUrl: string) =>
  ({ provider: 'wonderpush', access_token: WP_TOKEN, base_url: baseUrl }) as const;

export const send = (tenant: Tenant, user: string) =>
  tenant.client.pushSend({
    body: { user_id: user, title: 'Hello', message: 'A message', action_url: 'https://a.example/x' },
  });
