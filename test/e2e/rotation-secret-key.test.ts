// Rotating SECRET_KEY across instances on one database, as docs/rotation.md tells operators: every
// instance first accepts the new key (SECRET_KEY_PREVIOUS), then seals with it (SECRET_KEY new,
// SECRET_KEY_PREVIOUS old; the start re-seals every stored secret), then drops the old one. Pushes
// through a webhook (its signing secret is sealed) keep succeeding throughout, identity secrets
// keep verifying, the re-seal pass is safe to run twice at once, and the old key alone no longer
// opens anything.
import { createHash } from 'node:crypto';
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { open, seal } from '../../server/src/secrets.js';
import type { Database } from '../../server/src/storage/db.js';
import { userHashFor, verifyUserHash } from '../../server/src/website/identity-secrets.js';
import { startFakeWebhook } from '../helpers/fake-push.js';
import { openOwnDatabase } from '../helpers/own-database.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const OLD = 'rotation-old-secret-key-1a2b3c4d5e';
const NEW = 'rotation-new-secret-key-9z8y7x6w5v';
const HOOK_SECRET = 'whsec-rotation-SECRET-77aa66bb';

let own: { database: Database; close(): Promise<void> };
let hook: Awaited<ReturnType<typeof startFakeWebhook>>;
const servers: TestServer[] = [];
let tenant: Tenant;
let identitySecret: string;

const start = async (env: Record<string, string>) => {
  const s = await startTestServer(env, { database: own.database });
  servers.push(s);
  return s;
};
const stop = async (s: TestServer) => {
  servers.splice(servers.indexOf(s), 1);
  await s.close();
};

beforeAll(async () => {
  // The re-seal pass walks every app's secrets: this file keeps its own database.
  own = await openOwnDatabase('secret_rotation');
  hook = await startFakeWebhook({ secret: HOOK_SECRET });
}, 120_000);
afterAll(async () => {
  for (const s of [...servers].reverse()) await s.close();
  await hook?.close();
  await own?.close();
});

const pushVia = (s: TestServer) =>
  s.clientFor(tenant.apiKey).pushSend({ body: { user_id: 'reader', title: 'Hi', message: 'Hello' } });

/** Sends pushes through `s` until `stop()`, which waits for a few more first; resolves with every status. */
function keepPushing(s: TestServer) {
  let running = true;
  const statuses: number[] = [];
  const loop = (async () => {
    while (running) statuses.push((await pushVia(s)).response.status);
  })();
  return {
    async stop() {
      const target = statuses.length + 3;
      while (statuses.length < target) await new Promise((r) => setTimeout(r, 10));
      running = false;
      await loop;
      return statuses;
    },
  };
}

const sealedRows = async () => ({
  push: (await own.database.knex('push_providers').where({ app_id: tenant.app.id }).first()).secrets as string,
  identity: (await own.database.knex('app_identity_secrets').where({ app_id: tenant.app.id }).first()).secret as string,
});
const hashOk = (s: TestServer) =>
  verifyUserHash(s.tally.context, tenant.app.id, 'reader', userHashFor(identitySecret, 'reader'));

describe('SECRET_KEY rotation', () => {
  it('keeps every stored secret usable through the rotation, and the old key alone opens nothing after', async () => {
    const before = await start({ SECRET_KEY: OLD });
    tenant = await before.createTenant();
    const admin = createTallyClient({ baseUrl: before.url, adminToken: before.config.adminToken });
    expect((await tenant.client.usersUpsert({ body: { user_id: 'reader' } })).response.status).toBe(200);
    const configured = await admin.adminPushConfigure({
      path: { app_id: tenant.app.id },
      body: { provider: 'webhook', webhook_url: `${hook.baseUrl}/push`, webhook_secret: HOOK_SECRET },
    });
    expect(configured.error).toBeUndefined();
    identitySecret = (await admin.adminIdentitySecretsGenerate({ path: { app_id: tenant.app.id } })).data!.secret;

    // 1. every instance learns the new key while still sealing with the old one
    const onBefore = keepPushing(before);
    const accepting = await start({ SECRET_KEY: OLD, SECRET_KEY_PREVIOUS: NEW });
    expect((await onBefore.stop()).every((s) => s === 200)).toBe(true);
    await stop(before);

    // 2. instances seal with the new key; the first to start seals every stored secret again
    const onAccepting = keepPushing(accepting);
    const sealing = await start({ SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: OLD });
    const onSealing = keepPushing(sealing);
    const rows = await sealedRows();
    expect(open(NEW, tenant.app.id, rows.push)).toEqual({ webhook_secret: HOOK_SECRET });
    expect(open(NEW, tenant.app.id, rows.identity, 'identity-secrets')).toEqual({ secret: identitySecret });
    expect(await hashOk(accepting)).toBe(true);
    expect(await hashOk(sealing)).toBe(true);
    expect((await onAccepting.stop()).every((s) => s === 200)).toBe(true);
    expect((await onSealing.stop()).every((s) => s === 200)).toBe(true);
    const startPass = await createTallyClient({
      baseUrl: sealing.url,
      adminToken: sealing.config.adminToken,
    }).adminAuditList({
      query: { action: 'secret_key.reseal' },
    });
    expect(startPass.data!.items).toHaveLength(1);
    expect(startPass.data!.items[0]).toMatchObject({
      actor: 'server-start',
      details: { push_providers: { resealed: 1, unreadable: 0 }, identity_secrets: { resealed: 1, unreadable: 0 } },
    });
    expect(JSON.stringify(startPass.data)).not.toContain(HOOK_SECRET);
    expect(JSON.stringify(startPass.data)).not.toContain(NEW);

    // 3. a value an instance of step 1 sealed meanwhile is found by `tally secrets rotate`; two
    //    passes at once seal it once between them
    await own.database
      .knex('push_providers')
      .where({ app_id: tenant.app.id })
      .update({ secrets: seal(OLD, tenant.app.id, { webhook_secret: HOOK_SECRET }) });
    const sealingAdmin = createTallyClient({ baseUrl: sealing.url, adminToken: sealing.config.adminToken });
    const [a, b] = await Promise.all([sealingAdmin.adminSecretKeyReseal(), sealingAdmin.adminSecretKeyReseal()]);
    expect(a.data!.push_providers.resealed + b.data!.push_providers.resealed).toBe(1);
    expect(a.data!.push_providers.unreadable + b.data!.push_providers.unreadable).toBe(0);
    expect(a.data!.previous_keys).toBe(1);
    const again = (await sealingAdmin.adminSecretKeyReseal()).data!;
    expect(again.push_providers).toMatchObject({ resealed: 0, current: 1, unreadable: 0 });
    expect(again.identity_secrets).toMatchObject({ resealed: 0, current: 1, unreadable: 0 });
    await stop(accepting);

    // 4. the old key is dropped: the new one alone opens everything, the old one alone nothing
    const onSealingAgain = keepPushing(sealing);
    const after = await start({ SECRET_KEY: NEW });
    expect((await pushVia(after)).response.status).toBe(200);
    expect(await hashOk(after)).toBe(true);
    expect((await onSealingAgain.stop()).every((s) => s === 200)).toBe(true);
    const stale = await start({ SECRET_KEY: OLD });
    const refused = await pushVia(stale);
    expect(refused.response.status).toBe(500);
    expect(refused.error?.message).toContain('SECRET_KEY');
    expect(await hashOk(stale)).toBe(false);
    // every push of the rotation reached the receiver, signed with the secret it was configured with
    expect(hook.verified.length).toBeGreaterThan(10);
  }, 180_000);

  it('never stores a secret in plain text', async () => {
    const rows = await sealedRows();
    const digest = (v: string) => createHash('sha256').update(v).digest('hex');
    for (const value of [rows.push, rows.identity]) {
      expect(value).toMatch(/^v1:/);
      for (const secret of [HOOK_SECRET, identitySecret, NEW, OLD]) {
        expect(value).not.toContain(secret);
        expect(value).not.toContain(digest(secret));
      }
    }
  });
});
