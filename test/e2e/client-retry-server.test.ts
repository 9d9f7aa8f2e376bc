// @tally/client's retries against the real server, through a proxy that loses the first answer:
// the work was done, the client did not hear it, and the retry must not do it again. A batch is
// stored once (the client gave its events insert_ids); a push is sent once (the client sent an
// Idempotency-Key, and the server answered the retry with the first answer).
import { createTallyClient } from '@tally/client';
import { afterEach, describe, expect, it } from 'vitest';
import { type DroppingProxy, startDroppingProxy } from '../helpers/dropping-proxy.js';
import { startFakeWonderPush } from '../helpers/fake-push.js';
import { configure, db, push, tenantWithUser, usePushServer, WP_TOKEN } from '../helpers/push-setup.js';

usePushServer();
let proxy: DroppingProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
});

describe('a call retried after its answer was lost', () => {
  it('stores a batch of events once', async () => {
    const tenant = await tenantWithUser('batch-user');
    proxy = await startDroppingProxy(push.server.url);
    const client = createTallyClient({ baseUrl: proxy.url, apiKey: tenant.apiKey, retry: { baseDelay: 20 } });
    const events = ['viewed', 'added', 'paid'].map((event_name) => ({ event_name, user_id: 'batch-user' }));
    const { data, error } = await client.eventsTrackBatch({ body: { events } });
    expect(error).toBeUndefined();
    expect(data).toMatchObject({ success: true });
    expect(proxy.forwarded.map((f) => [f.status, f.dropped])).toEqual([
      [200, true],
      [200, false],
    ]);
    const stored = await db()('events').where({ app_id: tenant.app.id }).pluck('event_name');
    expect(stored.sort()).toEqual(['added', 'paid', 'viewed']);
  });

  it('stores the batch twice without retries, when the caller sends it again (what insert_id prevents)', async () => {
    const tenant = await tenantWithUser('twice-user');
    proxy = await startDroppingProxy(push.server.url);
    const client = createTallyClient({ baseUrl: proxy.url, apiKey: tenant.apiKey });
    const body = { events: [{ event_name: 'paid', user_id: 'twice-user' }] };
    expect((await client.eventsTrackBatch({ body })).error?.code).toBe('NETWORK_ERROR');
    expect((await client.eventsTrackBatch({ body })).error).toBeUndefined();
    expect(await db()('events').where({ app_id: tenant.app.id }).pluck('event_name')).toEqual(['paid', 'paid']);
  });

  it('sends one push, and returns the answer of the push that was sent', async () => {
    const wp = await startFakeWonderPush({ accessToken: WP_TOKEN });
    try {
      const tenant = await tenantWithUser('push-user');
      await configure(tenant.app.id, { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl });
      proxy = await startDroppingProxy(push.server.url);
      const client = createTallyClient({ baseUrl: proxy.url, apiKey: tenant.apiKey, retry: { baseDelay: 20 } });
      const { data, error, response } = await client.pushSend({
        body: { user_id: 'push-user', title: 'Hi', message: 'Once' },
      });
      expect(error).toBeUndefined();
      expect(response.headers.get('Idempotent-Replayed')).toBe('true');
      expect(proxy.forwarded).toHaveLength(2);
      expect(wp.sent).toEqual([{ targetUserIds: ['push-user'] }]);
      const deliveries = await db()('push_deliveries').where({ app_id: tenant.app.id }).pluck('id');
      expect(deliveries).toEqual([data!.deliveryId]);
    } finally {
      await wp.close();
    }
  });
});
