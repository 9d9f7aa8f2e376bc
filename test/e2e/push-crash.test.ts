// A server process killed with SIGKILL in the middle of a 1,000-recipient campaign, while the
// provider holds its answer to one call (some recipients sent, some not), then started again:
// through OneSignal (idempotency keys) every recipient ends with exactly one delivery row and
// exactly one notification, counted at the local provider that deduplicates keys as OneSignal
// does; through WonderPush (no idempotency key) at most one each, and the row whose answer was
// lost is `unknown` and reported. PostgreSQL only: two lives of a process share one database.
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CAMPAIGN_TICK } from '../../server/src/jobs/index.js';
import { startFakeOneSignal, startFakeWonderPush } from '../helpers/fake-push.js';
import { type Fleet, onPostgres, startFleet, until } from '../helpers/process-fleet.js';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.js';
import { OS_APP, OS_KEY, WP_TOKEN } from '../helpers/push-setup.js';

const RECIPIENTS = 1000;
const KILL_AT = 300; // the provider call whose answer is held while the process is killed

let fleet: Fleet;
beforeAll(async () => {
  if (onPostgres()) fleet = await startFleet({ PUSH_PENDING_STALE_SECONDS: '2' });
}, 120_000);
afterAll(() => fleet?.close());

/** Users u0000..u0999 with distinct first names: each text differs, so one provider call each. */
async function audience(baseUrl: string, apiKey: string) {
  const client = createTallyClient({ baseUrl, apiKey });
  for (let i = 0; i < RECIPIENTS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) => {
        const n = String(i + j).padStart(4, '0');
        return client.usersUpsert({ body: { user_id: `u${n}`, properties: { first_name: `Name${n}` } } });
      }),
    );
  }
  return client;
}

async function runCrash(provider: 'onesignal' | 'wonderpush') {
  // Each step and when it began, printed as it begins, so a stall (even one that only the test's
  // time limit ends) names its step; a failure also prints the server's output.
  const began = Date.now();
  const step = (what: string) =>
    console.info(`${provider} crash run, ${((Date.now() - began) / 1000).toFixed(1)} s: ${what}`);
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  let calls = 0;
  const hold = () => (++calls === KILL_AT ? held : undefined);
  const fake =
    provider === 'onesignal'
      ? await startFakeOneSignal({ appId: OS_APP, restApiKey: OS_KEY, subscribedExternalIds: 'all', hold })
      : await startFakeWonderPush({ accessToken: WP_TOKEN, hold });
  let proc: ServerProcess | undefined;
  try {
    step('start the server');
    proc = await startServerProcess(fleet.env);
    step('create the tenant and its 1,000 users');
    const { appId, apiKey } = await fleet.tenant();
    await audience(proc.url, apiKey);
    step('configure the provider and create the campaign');
    const admin = fleet.admin(proc.url);
    const configured = await admin.adminPushConfigure({
      path: { app_id: appId },
      body:
        provider === 'onesignal'
          ? { provider, onesignal_app_id: OS_APP, rest_api_key: OS_KEY, base_url: fake.baseUrl }
          : { provider, access_token: WP_TOKEN, base_url: fake.baseUrl },
    });
    expect(configured.error).toBeUndefined();
    const created = await admin.adminCampaignsCreate({
      path: { app_id: appId },
      body: { name: 'crash', title: 'Hello', message: 'Hi {{first_name}}', schedule_type: 'now' },
    });
    expect(created.error).toBeUndefined();
    const campaignId = created.data!.campaign_id;
    step('run the campaign up to the held call');
    await fleet.jobs.wake(CAMPAIGN_TICK);
    await until(async () => calls >= KILL_AT, 120_000, `provider call ${KILL_AT}`);
    step('kill the server');
    await proc.stop('SIGKILL');
    release();
    const knex = fleet.db.knex;
    const rows = () => knex('push_deliveries').where({ app_id: appId, campaign_id: campaignId });
    // killed between provider calls: some recipients have a delivery, most do not yet
    const before = await rows().select('status');
    expect(before.length).toBeGreaterThanOrEqual(KILL_AT);
    expect(before.length).toBeLessThan(RECIPIENTS);
    expect(before.filter((r) => r.status === 'pending')).toHaveLength(1);

    await new Promise((r) => setTimeout(r, 2_500)); // the pending row becomes stale
    step('start the server again');
    proc = await startServerProcess(fleet.env); // its start sweeps, then sends the rest
    step('wait for every recipient to be resolved');
    await until(
      async () => {
        const [d] = await rows().whereNot('status', 'pending').count<{ n: string }[]>({ n: '*' });
        return Number(d!.n) === RECIPIENTS;
      },
      180_000,
      'every recipient resolved',
    );
    step('read the outcome');
    await fleet.jobs.wake(CAMPAIGN_TICK);
    const after = await rows().select('user_id', 'status');
    expect(new Set(after.map((r) => r.user_id)).size).toBe(RECIPIENTS); // one row per recipient
    expect(after).toHaveLength(RECIPIENTS);
    const received = new Map<string, number>();
    const targets =
      'sent' in fake && provider === 'onesignal'
        ? (fake as Awaited<ReturnType<typeof startFakeOneSignal>>).sent.flatMap((s) => s.externalIds)
        : (fake as Awaited<ReturnType<typeof startFakeWonderPush>>).sent.flatMap((s) => s.targetUserIds);
    for (const id of targets) received.set(id, (received.get(id) ?? 0) + 1);
    const status = await createTallyClient({ baseUrl: proc.url, apiKey }).pushCampaignStatus({
      path: { campaign_id: campaignId },
    });
    expect(status.error).toBeUndefined();
    return { after, received, stats: status.data!.stats, requests: fake.requests.length };
  } catch (err) {
    console.error(`${provider} crash run failed; server output:\n${proc?.output()}`);
    throw err;
  } finally {
    step('stop the server and the provider');
    release();
    await proc?.stop('SIGKILL');
    await fake.close();
  }
}

describe.skipIf(!onPostgres())('a server killed with SIGKILL mid-campaign', () => {
  it('OneSignal: every recipient has one delivery row and received exactly one notification', async () => {
    const { after, received, stats, requests } = await runCrash('onesignal');
    expect(received.size).toBe(RECIPIENTS);
    expect([...received.values()].every((n) => n === 1)).toBe(true);
    expect(after.every((r) => r.status === 'delivered')).toBe(true);
    expect(stats).toMatchObject({ total_recipients: RECIPIENTS, delivered: RECIPIENTS, pending: 0, unknown: 0 });
    // the held call was made again after the restart, under its key, and sent nothing new
    expect(requests).toBe(RECIPIENTS + 1);
  }, 400_000);

  it('WonderPush: at most one notification each; the row whose answer was lost is unknown', async () => {
    const { after, received, stats } = await runCrash('wonderpush');
    expect([...received.values()].every((n) => n === 1)).toBe(true);
    const unknown = after.filter((r) => r.status === 'unknown');
    expect(unknown).toHaveLength(1);
    expect(after.filter((r) => r.status === 'delivered')).toHaveLength(RECIPIENTS - 1);
    expect(stats).toMatchObject({ total_recipients: RECIPIENTS, unknown: 1, pending: 0 });
    // the provider did get that one (it held its answer): the user received it once, not twice
    expect(received.size).toBe(RECIPIENTS);
  }, 400_000);
});
