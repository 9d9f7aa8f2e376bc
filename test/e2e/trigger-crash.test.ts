// A server process killed with SIGKILL after taking a trigger occurrence from the outbox and
// before sending it (it is waiting for the language model to write the text), then started
// again: the occurrence is still in the outbox, and the next process sends it exactly once,
// counted at the local WonderPush (no idempotency key: a duplicate would show). PostgreSQL only:
// two lives of a process share one database.
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAMPAIGN_TRIGGERS } from '../../server/src/jobs/index.js';
import { type FakeOpenAi, startFakeOpenAi } from '../helpers/fake-openai.js';
import { startFakeWonderPush } from '../helpers/fake-push.js';
import { type Fleet, onPostgres, startFleet, until } from '../helpers/process-fleet.js';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.js';
import { WP_TOKEN } from '../helpers/push-setup.js';

let fleet: Fleet;
let llm: FakeOpenAi;
let release!: () => void;
const held = new Promise<string>((r) => {
  release = () => r('Thanks for the wish (held answer)');
});
let answered = 0;

beforeAll(async () => {
  if (!onPostgres()) return;
  // The first text request is held (the process is killed while it waits); later ones are answered.
  llm = await startFakeOpenAi(() => (++answered === 1 ? held : 'Thanks for the wish'));
  // a worker's hold on an occurrence (its lease) ends 2 s after it took it
  fleet = await startFleet({ PUSH_PENDING_STALE_SECONDS: '2', LLM_BASE_URL: llm.baseUrl, LLM_API_KEY: 'test' });
}, 120_000);
afterAll(async () => {
  release?.();
  await fleet?.close();
  await llm?.close();
});

describe.skipIf(!onPostgres())('a server killed between taking a trigger occurrence and sending it', () => {
  it('leaves the occurrence in the outbox; the restarted server sends it exactly once', async () => {
    const wp = await startFakeWonderPush({ accessToken: WP_TOKEN });
    let proc: ServerProcess | undefined;
    try {
      proc = await startServerProcess(fleet.env);
      const { appId, apiKey } = await fleet.tenant();
      const client = createTallyClient({ baseUrl: proc.url, apiKey });
      expect((await client.usersUpsert({ body: { user_id: 'fan' } })).error).toBeUndefined();
      const admin = fleet.admin(proc.url);
      const configured = await admin.adminPushConfigure({
        path: { app_id: appId },
        body: { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl },
      });
      expect(configured.error).toBeUndefined();
      const created = await admin.adminCampaignsCreate({
        path: { app_id: appId },
        body: {
          name: 'wish',
          title: 'Noted',
          prompt: 'Thank them for adding to their wishlist',
          schedule_type: 'trigger',
          trigger_event_name: 'wishlist_added',
        },
      });
      expect(created.error).toBeUndefined();
      const campaignId = created.data!.campaign_id;
      expect(
        (await client.eventsTrack({ body: { user_id: 'fan', event_name: 'wishlist_added' } })).error,
      ).toBeUndefined();
      const knex = fleet.db.knex;
      const outbox = () => knex('campaign_trigger_outbox').where({ app_id: appId, campaign_id: campaignId });
      // the worker took the occurrence and waits for its text
      await until(async () => llm.requests.length >= 1, 60_000, 'the text request');
      expect(await outbox()).toMatchObject([{ attempts: 1 }]);
      await proc.stop('SIGKILL');
      release();
      expect(wp.requests).toHaveLength(0);
      expect(await outbox()).toHaveLength(1); // not lost with the process

      proc = await startServerProcess(fleet.env);
      await new Promise((r) => setTimeout(r, 2_100)); // the killed worker's lease ends
      await until(
        async () => {
          await fleet.jobs.wake(CAMPAIGN_TRIGGERS);
          await new Promise((r) => setTimeout(r, 500));
          return wp.sent.length > 0;
        },
        60_000,
        'the push',
      );
      // more runs find nothing left to send
      for (let i = 0; i < 3; i++) await fleet.jobs.wake(CAMPAIGN_TRIGGERS);
      await until(async () => (await outbox()).length === 0, 10_000, 'the outbox emptied');
      await new Promise((r) => setTimeout(r, 1_500));
      expect(wp.sent.map((s) => s.targetUserIds)).toEqual([['fan']]);
      expect(wp.requests.map((r) => r.body.notification.alert.text)).toEqual(['Thanks for the wish']);
      const sends = await knex('campaign_sends').where({ app_id: appId, campaign_id: campaignId });
      expect(sends.map((s) => s.status)).toEqual(['done']);
      const deliveries = await knex('push_deliveries').where({ app_id: appId, campaign_id: campaignId });
      expect(deliveries.map((d) => d.status)).toEqual(['delivered']);
    } finally {
      release();
      await proc?.stop('SIGKILL');
      await wp.close();
    }
  }, 180_000);
});
