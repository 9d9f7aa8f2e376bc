// Shared set-up of the push tests: one server with SECRET_KEY, an admin client, provider
// credentials the fake providers expect, and small helpers.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, expect } from 'vitest';
import { startTestServer, type Tenant, type TestServer } from './server.js';

export const SECRET_KEY = 'push-test-secret-key-0123456789-abcdefghij';
export const WP_TOKEN = 'wp-access-token-SECRET-3f9a8b7c6d';
export const OS_KEY = 'os_v2_app_rest-key-SECRET-88ab77cd';
export const OS_APP = '5eb5a37e-b458-11e3-ac11-000c2940e62c';
export const HOOK_SECRET = 'whsec-SECRET-0a1b2c3d4e5f';

/** The file's server and admin client, set by usePushServer() before its tests run. */
export const push = { server: undefined as unknown as TestServer, admin: undefined as unknown as TallyClient };

export function usePushServer(): void {
  beforeAll(async () => {
    // The fake push services listen on 127.0.0.1 over http: exempt from the endpoint rules.
    push.server = await startTestServer({ SECRET_KEY, PUSH_ENDPOINT_ALLOWLIST: '127.0.0.1' });
    push.admin = createTallyClient({ baseUrl: push.server.url, adminToken: push.server.config.adminToken });
  });
  afterAll(() => push.server?.close());
}

export const db = () => push.server.db.knex;
export const delivery = (id: string) => db()('push_deliveries').where({ id }).first();

export async function tenantWithUser(externalId = 'user-1', on: TestServer = push.server): Promise<Tenant> {
  const tenant = await on.createTenant();
  const { error } = await tenant.client.usersUpsert({
    body: { user_id: externalId, email: `${externalId}@example.com` },
  });
  expect(error).toBeUndefined();
  return tenant;
}

export async function configure(
  appId: string,
  body: Parameters<TallyClient['adminPushConfigure']>[0]['body'],
  client: TallyClient = push.admin,
) {
  const result = await client.adminPushConfigure({ path: { app_id: appId }, body });
  expect(result.error).toBeUndefined();
  return result.data!;
}
