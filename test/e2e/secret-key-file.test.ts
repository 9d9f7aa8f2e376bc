// A fresh embedded installation without SECRET_KEY, started as `npm start` runs it: it generates
// a key into its data directory (mode 0600, beside credentials.json), so a push provider can be
// configured at once without a restart, and it reuses that key on the next start (the provider's
// secrets still open: the Web Push VAPID key pair is kept, and a push through a webhook is signed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTallyClient } from '@tally/client';
import { afterAll, describe, expect, it } from 'vitest';
import { startFakeWebhook } from '../helpers/fake-push.js';
import { startServerProcess } from '../helpers/process-server.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tally-secret-key-'));
const ADMIN_TOKEN = 'tk_admin_secret-key-file-test-token';
const HOOK_SECRET = 'whsec-file-SECRET-4e5f6a7b';
// An embedded installation: no DATABASE_URL, no SECRET_KEY, whatever the test run uses.
const env = { DATA_DIR: dataDir, DATABASE_URL: '', SECRET_KEY: '', SECRET_KEY_PREVIOUS: '', ADMIN_TOKEN };

afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('a generated SECRET_KEY', () => {
  it('lets a fresh install configure push at once, is private to its owner, and is reused on restart', async () => {
    const hook = await startFakeWebhook({ secret: HOOK_SECRET });
    let server = await startServerProcess(env);
    try {
      const credentials = JSON.parse(fs.readFileSync(path.join(dataDir, 'credentials.json'), 'utf8'));
      const appId: string = credentials.app_id;
      let admin = createTallyClient({ baseUrl: server.url, adminToken: ADMIN_TOKEN });
      const webpush = await admin.adminPushConfigure({
        path: { app_id: appId },
        body: { provider: 'webpush', vapid_subject: 'mailto:ops@example.com' },
      });
      expect(webpush.error).toBeUndefined();
      const file = path.join(dataDir, 'secret-key');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const key = fs.readFileSync(file, 'utf8');
      expect(key.trim().length).toBeGreaterThanOrEqual(32);
      expect(server.output()).not.toContain(key.trim());

      await server.stop();
      server = await startServerProcess(env);
      admin = createTallyClient({ baseUrl: server.url, adminToken: ADMIN_TOKEN });
      expect(fs.readFileSync(file, 'utf8')).toBe(key);
      // The VAPID private key opened with the same key: the pair is kept, browsers stay subscribed.
      const again = await admin.adminPushConfigure({
        path: { app_id: appId },
        body: { provider: 'webpush', vapid_subject: 'mailto:ops@example.com' },
      });
      expect(again.data?.webpush_public_key).toBe(webpush.data!.webpush_public_key);

      const hooked = await admin.adminPushConfigure({
        path: { app_id: appId },
        body: { provider: 'webhook', webhook_url: `${hook.baseUrl}/push`, webhook_secret: HOOK_SECRET },
      });
      expect(hooked.error).toBeUndefined();
      await server.stop();
      server = await startServerProcess(env);
      const rest = createTallyClient({ baseUrl: server.url, apiKey: credentials.api_key });
      expect((await rest.usersUpsert({ body: { user_id: 'reader' } })).response.status).toBe(200);
      const sent = await rest.pushSend({ body: { user_id: 'reader', title: 'Hi', message: 'Hello' } });
      expect(sent.error).toBeUndefined();
      expect(hook.verified).toHaveLength(1);
    } finally {
      await server.stop();
      await hook.close();
    }
  }, 240_000);
});
