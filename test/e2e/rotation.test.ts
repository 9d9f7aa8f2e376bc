// Rotating the admin token and API keys while clients keep calling: a loop of requests with the
// old credential runs through the rotation and every request of it succeeds; once the overlap
// ends (its time passes, the previous tokens are retired, the old key is revoked, or the server
// restarts without ADMIN_TOKEN_PREVIOUS), the old credential is refused with 401.
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueAdminToken } from '../../server/src/admin/keys.js';
import type { Database } from '../../server/src/storage/db.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

let own: { database: Database; close(): Promise<void> };
let server: TestServer;
let first: string;

beforeAll(async () => {
  // Stored admin tokens are the installation's: this file keeps its own database.
  own = await openOwnDatabase('rotation');
  first = (await issueAdminToken(own.database.knex, new Date(), 'before rotation')).token;
  server = await startTestServer({ ADMIN_TOKEN: '' }, { database: own.database });
}, 120_000);
afterAll(async () => {
  await server?.close();
  await own?.close();
});

/**
 * Calls `request` over and over until `stop()`, which first waits for at least `least` more calls
 * after it is asked, so the loop is known to have run on both sides of what the test did meanwhile.
 */
function keepCalling(request: () => Promise<{ response: Response }>) {
  let running = true;
  const statuses: number[] = [];
  const loop = (async () => {
    while (running) {
      statuses.push((await request()).response.status);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    async stop(least = 3) {
      const target = statuses.length + least;
      while (statuses.length < target) await new Promise((r) => setTimeout(r, 10));
      running = false;
      await loop;
      return statuses;
    },
  };
}

const adminAt = (url: string, token: string) => createTallyClient({ baseUrl: url, adminToken: token });
const orgList = (client: TallyClient) => client.adminOrganizationsList();

describe('admin token rotation (stored tokens)', () => {
  it('keeps the old token valid through the overlap, then refuses it', async () => {
    const old = adminAt(server.url, first);
    const calls = keepCalling(() => orgList(old));
    const rotated = await old.adminTokensRotate({ body: { overlap_seconds: 5, label: 'short overlap' } });
    expect(rotated.error).toBeUndefined();
    const { token, previous_tokens_end_at, active } = rotated.data!;
    expect(token).toMatch(/^tk_admin_/);
    expect(active.map((t) => t.token_id)).toContain(rotated.data!.token_id);
    const fresh = adminAt(server.url, token);
    expect((await orgList(fresh)).response.status).toBe(200);
    const statuses = await calls.stop();
    expect(statuses.every((s) => s === 200)).toBe(true);

    // the overlap ends at the time the rotation gave
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(previous_tokens_end_at!) - Date.now()) + 200));
    const refused = await orgList(old);
    expect(refused.response.status).toBe(401);
    expect(refused.error).toMatchObject({ code: 'INVALID_API_KEY' });
    expect((await orgList(fresh)).response.status).toBe(200);
    // only a hash is stored
    const rows = await own.database.knex('admin_tokens').select('token_hash');
    expect(JSON.stringify(rows)).not.toContain(token);
    first = token;
  });

  it('ends the previous tokens at once when they are retired', async () => {
    const current = adminAt(server.url, first);
    const rotated = (await current.adminTokensRotate({ body: {} })).data!;
    // the default overlap is one day
    expect(Date.parse(rotated.previous_tokens_end_at!) - Date.now()).toBeGreaterThan(86_000_000);
    const next = adminAt(server.url, rotated.token);
    const calls = keepCalling(() => orgList(current));
    expect((await orgList(next)).response.status).toBe(200);
    expect((await calls.stop()).every((s) => s === 200)).toBe(true);
    const retired = await next.adminTokensRetirePrevious();
    expect(retired.data).toMatchObject({ retired: 1, active: [{ token_id: rotated.token_id }] });
    expect((await orgList(current)).response.status).toBe(401);
    expect((await orgList(next)).response.status).toBe(200);
    first = rotated.token;
  });

  it('refuses bad options with a clear error, not a 500', async () => {
    const res = await fetch(`${server.url}/admin/v1/admin-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first}`, 'content-type': 'application/json' },
      body: JSON.stringify({ overlap_seconds: -5, token: 'chosen-by-me' }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ success: false, code: 'INVALID_REQUEST' });
  });
});

describe('admin token rotation (ADMIN_TOKEN)', () => {
  it('accepts ADMIN_TOKEN_PREVIOUS during the overlap and refuses it once the variable is removed', async () => {
    const oldToken = 'tk_admin_env-old-token-0123456789';
    const newToken = 'tk_admin_env-new-token-9876543210';
    const before = await startTestServer({ ADMIN_TOKEN: oldToken }, { database: own.database });
    let during: TestServer | undefined;
    let after: TestServer | undefined;
    try {
      // Clients keep the old token while the instances are restarted with the new one.
      const onBefore = keepCalling(() => orgList(adminAt(before.url, oldToken)));
      during = await startTestServer(
        { ADMIN_TOKEN: newToken, ADMIN_TOKEN_PREVIOUS: oldToken },
        { database: own.database },
      );
      const onDuring = keepCalling(() => orgList(adminAt(during!.url, oldToken)));
      expect((await orgList(adminAt(during.url, newToken))).response.status).toBe(200);
      expect((await onBefore.stop()).every((s) => s === 200)).toBe(true);
      const duringStatuses = await onDuring.stop();
      expect(duringStatuses.every((s) => s === 200)).toBe(true);
      // the token is the environment's: it cannot be rotated through the API
      const conflict = await adminAt(during.url, newToken).adminTokensRotate({ body: {} });
      expect(conflict.response.status).toBe(409);
      expect(conflict.error?.message).toContain('ADMIN_TOKEN_PREVIOUS');

      after = await startTestServer({ ADMIN_TOKEN: newToken }, { database: own.database });
      expect((await orgList(adminAt(after.url, oldToken))).response.status).toBe(401);
      expect((await orgList(adminAt(after.url, newToken))).response.status).toBe(200);
      // stored tokens are not accepted while ADMIN_TOKEN is set
      expect((await orgList(adminAt(after.url, first))).response.status).toBe(401);
    } finally {
      await after?.close();
      await during?.close();
      await before.close();
    }
  });
});

describe('API key rotation', () => {
  it('serves the old key while the new one is created, and refuses it once revoked', async () => {
    const admin = adminAt(server.url, first);
    const tenant = await server.createTenant();
    const track = (client: TallyClient, i: number) =>
      client.eventsTrack({ body: { event_name: 'rotation_check', user_id: `u-${i}` } });
    let n = 0;
    const calls = keepCalling(() => track(tenant.client, n++));
    const created = await admin.adminKeysCreate({
      path: { app_id: tenant.app.id },
      body: { kind: 'rest', name: 'next' },
    });
    expect(created.error).toBeUndefined();
    const next = server.clientFor(created.data!.key);
    expect((await track(next, -1)).response.status).toBe(200);
    const statuses = await calls.stop();
    expect(statuses.every((s) => s === 200)).toBe(true);

    expect((await admin.adminKeysRevoke({ path: { key_id: tenant.apiKeyId } })).response.status).toBe(200);
    const refused = await track(tenant.client, -2);
    expect(refused.response.status).toBe(401);
    expect(refused.error).toMatchObject({ code: 'REVOKED_API_KEY' });
    expect((await track(next, -3)).response.status).toBe(200);
  });
});
