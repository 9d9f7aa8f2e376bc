// Exactly once across processes: two server processes on one PostgreSQL database, both working
// the campaign jobs, with one trigger campaign and one recurring campaign. Events arrive through
// both processes and campaign ticks are queued many times at once, so the two race for every
// occurrence; the local WonderPush (no idempotency key: a duplicate would show) counts what each
// user received. PostgreSQL only.
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAMPAIGN_TICK } from '../../server/src/jobs/index.js';
import { startFakeWonderPush } from '../helpers/fake-push.js';
import { type Fleet, onPostgres, startFleet, until } from '../helpers/process-fleet.js';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.js';
import { WP_TOKEN } from '../helpers/push-setup.js';

const USERS = 60;

let fleet: Fleet;
beforeAll(async () => {
  if (onPostgres()) fleet = await startFleet();
}, 120_000);
afterAll(() => fleet?.close());

describe.skipIf(!onPostgres())('two processes, one database', () => {
  it('every audience member gets exactly one push per occurrence of a trigger and a recurring campaign', async () => {
    const wp = await startFakeWonderPush({ accessToken: WP_TOKEN });
    const procs: ServerProcess[] = [];
    try {
      procs.push(await startServerProcess(fleet.env), await startServerProcess(fleet.env));
      const { appId, apiKey } = await fleet.tenant();
      const clients = procs.map((p) => createTallyClient({ baseUrl: p.url, apiKey }));
      const ids = Array.from({ length: USERS }, (_, i) => `m${i}`);
      for (const id of ids) expect((await clients[0]!.usersUpsert({ body: { user_id: id } })).error).toBeUndefined();
      const knex = fleet.db.knex;
      // the frequency cap is not what is tested here
      await knex('apps').where({ id: appId }).update({ push_frequency_cap_per_day: 1000 });
      const admin = fleet.admin(procs[0]!.url);
      expect(
        (
          await admin.adminPushConfigure({
            path: { app_id: appId },
            body: { provider: 'wonderpush', access_token: WP_TOKEN, base_url: wp.baseUrl },
          })
        ).error,
      ).toBeUndefined();
      const create = async (body: Record<string, unknown>) => {
        const r = await admin.adminCampaignsCreate({
          path: { app_id: appId },
          // biome-ignore lint/suspicious/noExplicitAny: two campaign shapes
          body: { name: 'x', title: 'T', ...body } as any,
        });
        expect(r.error).toBeUndefined();
        return r.data!.campaign_id;
      };
      const trigger = await create({
        message: 'Thanks for buying',
        schedule_type: 'trigger',
        trigger_event_name: 'buy',
      });
      const recurring = await create({ message: 'Minute news', schedule_type: 'recurring', recurrence: '* * * * *' });

      // each user buys once, through either process, all at once; ticks race on both processes
      await Promise.all([
        ...ids.map((id, i) => clients[i % 2]!.eventsTrack({ body: { user_id: id, event_name: 'buy' } })),
        ...Array.from({ length: 6 }, () => fleet.jobs.wake(CAMPAIGN_TICK)),
      ]);
      const occurrences = async () =>
        (await knex('campaign_sends').where({ app_id: appId, campaign_id: recurring }).distinct('occurrence')).length;
      const settled = async () => {
        const [busy] = await knex('campaign_sends')
          .where({ app_id: appId })
          .whereIn('status', ['queued', 'sending'])
          .count<{ n: string }[]>({ n: '*' });
        const [pending] = await knex('push_deliveries')
          .where({ app_id: appId, status: 'pending' })
          .count<{ n: string }[]>({ n: '*' });
        return Number(busy!.n) === 0 && Number(pending!.n) === 0;
      };
      const triggered = async () =>
        Number(
          (
            await knex('campaign_sends')
              .where({ app_id: appId, campaign_id: trigger })
              .count<{ n: string }[]>({ n: '*' })
          )[0]!.n,
        ) === USERS;
      await until(
        async () => (await occurrences()) >= 1 && (await triggered()) && (await settled()),
        90_000,
        'first run',
      );
      // the next minute's occurrence, again raced by both processes
      const first = await occurrences();
      await until(
        async () => {
          await Promise.all(Array.from({ length: 4 }, () => fleet.jobs.wake(CAMPAIGN_TICK)));
          await new Promise((r) => setTimeout(r, 1000));
          return (await occurrences()) > first && (await settled());
        },
        120_000,
        'second run',
      );
      await until(settled, 30_000, 'sends settled');
      const runs = await occurrences();
      expect(runs).toBeGreaterThanOrEqual(2);

      const count = (text: string) => {
        const got = new Map<string, number>();
        for (const call of wp.requests.filter((r) => r.body.notification.alert.text === text)) {
          for (const u of call.body.targetUserIds as string[]) got.set(u, (got.get(u) ?? 0) + 1);
        }
        return got;
      };
      const thanks = count('Thanks for buying');
      const news = count('Minute news');
      expect([...thanks.keys()].sort()).toEqual([...ids].sort());
      expect([...thanks.values()].every((n) => n === 1)).toBe(true);
      expect([...news.keys()].sort()).toEqual([...ids].sort());
      expect([...news.values()].every((n) => n === runs)).toBe(true);
      // one delivery row per (campaign, user, occurrence), each resolved
      const rows = await knex('push_deliveries').where({ app_id: appId }).select('status');
      expect(rows).toHaveLength(USERS * (1 + runs));
      expect(rows.every((r) => r.status === 'delivered')).toBe(true);
      // neither process fell over along the way
      expect(procs.every((p) => p.child.exitCode === null)).toBe(true);
    } finally {
      for (const p of procs) await p.stop();
      await wp.close();
    }
  }, 300_000);
});
