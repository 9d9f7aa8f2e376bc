// One user identity across features: an alias or a renamed id is seen the same way by events,
// audiences and push, and the old id of a renamed user is unknown everywhere.
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audienceMembers } from '../../server/src/audiences/audiences.js';
import { serviceContext } from '../fixtures/audience-data.js';
import { startFakeWebhook } from '../helpers/fake-push.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

const SECRET = 'webhook-signing-secret-for-identity-tests';
let server: TestServer;
let tenant: Tenant;
let webhook: Awaited<ReturnType<typeof startFakeWebhook>>;

beforeAll(async () => {
  server = await startTestServer({ SECRET_KEY: 'a-secret-key-for-the-identity-tests' });
  tenant = await server.createTenant();
  webhook = await startFakeWebhook({ secret: SECRET });
  const admin = createTallyClient({ baseUrl: server.url, adminToken: server.config.adminToken });
  const { error } = await admin.adminPushConfigure({
    path: { app_id: tenant.app.id },
    body: { provider: 'webhook', webhook_url: `${webhook.baseUrl}/hook`, webhook_secret: SECRET },
  });
  expect(error).toBeUndefined();
});
afterAll(async () => {
  await server?.close();
  await webhook?.close();
});

describe('a renamed user', () => {
  it('keeps its audiences and receives pushes under the new id; the old id is unknown', async () => {
    const c = tenant.client;
    await c.usersUpsert({ body: { user_id: 'id-old', properties: { tier: 'gold' } } });
    await c.eventsTrack({ body: { event_name: 'purchase', user_id: 'id-old' } });
    const { data: audience } = await c.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'Gold', criteria: 'users whose tier is gold' },
    });
    expect(audience?.user_count).toBe(1);

    await c.usersReplaceId({ body: { user_id: 'id-old', new_user_id: 'id-new' } });

    const members = await audienceMembers(serviceContext(server), tenant.app.id, audience!.audience_id, {
      limit: 10,
      offset: 0,
    });
    expect(members.users.map((u) => u.user_id)).toEqual(['id-new']);

    const sent = await c.pushSend({ body: { user_id: 'id-new', title: 'Hi', message: 'Thanks for your order' } });
    expect(sent.error).toBeUndefined();
    expect(webhook.verified.at(-1)).toMatchObject({ user_id: 'id-new', title: 'Hi' });

    const old = await c.pushSend({ body: { user_id: 'id-old', title: 'Hi', message: 'Anyone?' } });
    expect(old.response.status).toBe(404);
  });
});

describe('an alias', () => {
  it('reaches the same user through push as through events', async () => {
    const c = tenant.client;
    await c.usersUpsert({ body: { user_id: 'al-user' } });
    await c.usersCreateAlias({ body: { user_id: 'al-user', alias_id: 'device-42' } });
    const sent = await c.pushSend({ body: { user_id: 'device-42', title: 'Hello', message: 'From your alias' } });
    expect(sent.error).toBeUndefined();
    expect(webhook.verified.at(-1)).toMatchObject({ user_id: 'al-user' });
  });
});
