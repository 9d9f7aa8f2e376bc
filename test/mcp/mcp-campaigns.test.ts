// Campaigns a model starts, through the SDK's own client over HTTP (tools listed first, results
// checked against their output schemas by the client): never at once, never sooner than the lead
// time, never more often than hourly, recorded with the MCP key that created them, and refused
// where the app does not allow them. The campaign jobs run on a clock the test moves, on a job
// queue of this file's own, so nothing sleeps and no other file's server takes these runs.
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addUsers,
  type Clocked,
  createCampaign,
  detail,
  drainTriggers,
  startClockedServer,
  tick,
  useWonderPush,
  wonderPush,
} from '../helpers/campaigns.js';
import type { Tenant } from '../helpers/server.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
const START = '2026-06-01T10:00:00Z';

let c: Clocked;
let t: Tenant;
let wp: Awaited<ReturnType<typeof wonderPush>>;
let mcpKey: { id: string; key: string };
let client: Client;

beforeAll(async () => {
  c = await startClockedServer(START, {}, { jobSchema: `pgboss_mcp_${randomBytes(4).toString('hex')}` });
  t = await c.server.createTenant();
  wp = await wonderPush();
  await useWonderPush(c, t, wp.baseUrl);
  const key = await c.admin.adminKeysCreate({
    path: { app_id: t.app.id },
    body: { kind: 'mcp', permissions: ['read', 'write'], name: 'Claude on the marketing laptop' },
  });
  expect(key.error).toBeUndefined();
  mcpKey = { id: key.data!.key_id, key: key.data!.key };
  client = await connect();
});
afterAll(async () => {
  await client?.close();
  await c?.server.close();
  await wp?.close();
});

async function connect(): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${c.server.url}/mcp`), {
    requestInit: { headers: { 'X-MCP-API-Key': mcpKey.key } },
  });
  const mcp = new Client({ name: 'tally-test', version: '1.0.0' });
  await mcp.connect(transport);
  // As every real client does: list first, so that the client checks results against the schemas.
  const { tools } = await mcp.listTools();
  expect(tools.map((tool) => tool.name)).toContain('create_push_campaign');
  return mcp;
}

const base = { name: 'Come back', title: 'We miss you', message: 'Hi {{first_name}}' };

async function create(args: Record<string, unknown>) {
  return (await client.callTool({
    name: 'create_push_campaign',
    arguments: { app_id: t.app.id, ...base, ...args },
  })) as CallToolResult;
}

interface Created {
  campaign_id: string;
  status: string;
  scheduled_at: string | null;
  created_by: { kind: string; key_id: string | null; key_name: string | null };
}

async function created(args: Record<string, unknown>): Promise<Created> {
  const result = await create(args);
  expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
  return result.structuredContent as unknown as Created;
}

/** A refused call: its code and details, as a model reads them from the tool result. */
function refusal(result: CallToolResult): { code: string; details: Record<string, unknown> } {
  expect(result.isError).toBe(true);
  const text = (result.content[0] as { text: string }).text;
  const [first, json] = text.split('\n');
  return { code: first!.split(':')[0]!, details: JSON.parse(json ?? '{}') };
}

const campaignCount = async () =>
  Number((await c.server.db.knex('campaigns').where({ app_id: t.app.id }).count({ n: '*' }))[0]!.n);

describe('the lead time and interval rules', () => {
  it('refuses a scheduled_at in the past or sooner than 15 minutes, naming the earliest time allowed', async () => {
    const before = await campaignCount();
    for (const scheduledAt of ['2000-01-01T00:00:00Z', new Date(c.now().getTime() + 5 * MINUTE).toISOString()]) {
      for (const type of ['scheduled', 'recurring', 'slipping_away', 'trigger']) {
        const extra =
          type === 'recurring'
            ? { recurrence: '0 9 * * *' }
            : type === 'trigger'
              ? { trigger_event_name: 'purchase' }
              : {};
        const answer = await create({ schedule_type: type, scheduled_at: scheduledAt, ...extra });
        const { code, details } = refusal(answer);
        expect(code, type).toBe('INVALID_REQUEST');
        const earliest = new Date(details.earliest_scheduled_at as string).getTime();
        // creation time plus 15 minutes (the clock moves with real time while the test runs)
        expect(earliest - c.now().getTime(), type).toBeGreaterThan(14 * MINUTE);
        expect(earliest - c.now().getTime(), type).toBeLessThanOrEqual(15 * MINUTE);
      }
    }
    expect(await campaignCount()).toBe(before);
  });

  it('accepts a scheduled_at at the lead time, and returns it', async () => {
    const at = new Date(c.now().getTime() + 16 * MINUTE).toISOString();
    const body = await created({ schedule_type: 'scheduled', scheduled_at: at });
    expect(body.status).toBe('scheduled');
    expect(body.scheduled_at).toBe(at);
  });

  it('refuses recurrences that run less than an hour apart, and cooldowns below an hour', async () => {
    const before = await campaignCount();
    for (const recurrence of ['* * * * *', '*/30 * * * *', '0,59 * * * *', '0,30 9 * * *', '15,45 9 * * 1']) {
      const { code, details } = refusal(await create({ schedule_type: 'recurring', recurrence }));
      expect(code, recurrence).toBe('INVALID_REQUEST');
      expect(details.min_interval_minutes, recurrence).toBe(60);
    }
    const cooldown = refusal(
      await create({ schedule_type: 'trigger', trigger_event_name: 'purchase', trigger_cooldown_hours: 0 }),
    );
    expect(cooldown).toMatchObject({ code: 'INVALID_REQUEST', details: { min_interval_minutes: 60 } });
    expect(await campaignCount()).toBe(before);
  });

  it('accepts hourly and daily recurrences, first run at or after the lead time', async () => {
    // The clock stands a little after 10:00 (the test's start).
    const daily = await created({ schedule_type: 'recurring', recurrence: '10 10 * * *' });
    // 10:10 today is less than 15 minutes away: the first run is tomorrow's
    expect(daily.scheduled_at).toBe('2026-06-02T10:10:00.000Z');
    const hourly = await created({ schedule_type: 'recurring', recurrence: '20 * * * *' });
    expect(hourly.scheduled_at).toBe('2026-06-01T10:20:00.000Z');
  });

  it('refuses immediate sends', async () => {
    const result = await create({ schedule_type: 'now' });
    expect(result.isError).toBe(true);
  });
});

describe('campaigns without scheduled_at start at the lead time', () => {
  // An app of its own (same organization, so the same MCP key), whose only campaigns are these.
  let s: Tenant;
  let sp: Awaited<ReturnType<typeof wonderPush>>;
  const createIn = (args: Record<string, unknown>) => created({ app_id: s.app.id, ...args });
  beforeAll(async () => {
    s = await c.server.createTenant({ organizationId: t.organization.id });
    sp = await wonderPush();
    await useWonderPush(c, s, sp.baseUrl);
    // three users last active 10 days ago, one of them later the trigger's subject
    await addUsers(s, [{ id: 'ann' }, { id: 'bob' }, { id: 'cid' }]);
    const old = new Date(c.now().getTime() - 10 * DAY).toISOString();
    const { error } = await s.client.eventsTrackBatch({
      body: { events: ['ann', 'bob', 'cid'].map((user_id) => ({ user_id, event_name: 'login', timestamp: old })) },
    });
    expect(error).toBeUndefined();
  });
  afterAll(() => sp?.close());

  it('sends nothing before then, and sends once the lead time has passed', async () => {
    const slipping = await createIn({ schedule_type: 'slipping_away' });
    const trigger = await createIn({ schedule_type: 'trigger', trigger_event_name: 'purchase' });
    for (const body of [slipping, trigger]) {
      expect(body.status).toBe('scheduled');
      const row = await detail(c, body.campaign_id);
      expect(new Date(body.scheduled_at!).getTime() - new Date(row.created_at).getTime()).toBe(15 * MINUTE);
      expect(row.next_run_at).toBe(body.scheduled_at);
    }

    // Ten minutes later a visitor does the trigger event, and the jobs run: nothing is sent.
    c.advance(10 * MINUTE);
    await s.client.eventsTrack({ body: { user_id: 'ann', event_name: 'purchase' } });
    await drainTriggers(c);
    await tick(c);
    expect(sp.calls).toEqual([]);
    expect((await detail(c, slipping.campaign_id)).status).toBe('scheduled');
    expect((await detail(c, trigger.campaign_id)).status).toBe('scheduled');

    // Past the lead time: the slipping-away campaign reaches the inactive users, and a new
    // trigger event is answered.
    c.advance(6 * MINUTE);
    await tick(c);
    expect(sp.reached().sort()).toEqual(['bob', 'cid']); // ann was active 6 minutes ago
    await s.client.eventsTrack({ body: { user_id: 'bob', event_name: 'purchase' } });
    await drainTriggers(c);
    expect(sp.reached().sort()).toEqual(['bob', 'bob', 'cid']);
    expect((await detail(c, trigger.campaign_id)).status).toBe('live');
  });

  it('leaves the admin API as it was: a campaign without scheduled_at starts at once', async () => {
    const admin = await createCampaign(c, s.app.id, {
      schedule_type: 'slipping_away',
      audience_prompt: 'users who did login',
    });
    expect(admin.scheduled_at).toBeNull();
    expect(admin.created_by).toEqual({ kind: 'admin', key_id: null, key_name: null });
    const row = await detail(c, admin.campaign_id);
    expect(new Date(row.next_run_at!).getTime()).toBeLessThanOrEqual(c.now().getTime());
  });
});

describe('who created it', () => {
  it('records the MCP key on the campaign, in every view of it, and in the audit trail', async () => {
    const body = await created({ schedule_type: 'trigger', trigger_event_name: 'signup', name: 'Welcome' });
    const creator = { kind: 'mcp', key_id: mcpKey.id, key_name: 'Claude on the marketing laptop' };
    expect(body.created_by).toEqual(creator);
    expect((await detail(c, body.campaign_id)).created_by).toEqual(creator);
    const status = await client.callTool({ name: 'get_campaign_status', arguments: { campaign_id: body.campaign_id } });
    expect((status.structuredContent as { created_by: unknown }).created_by).toEqual(creator);
    const get = await fetch(`${c.server.url}/mcp/resources/campaigns/${body.campaign_id}`, {
      headers: { 'X-MCP-API-Key': mcpKey.key },
    });
    expect(((await get.json()) as { created_by: unknown }).created_by).toEqual(creator);

    const audit = await c.admin.adminPrivacyAudit({ path: { app_id: t.app.id }, query: { limit: 100 } });
    expect(audit.error).toBeUndefined();
    const entries = audit.data!.items.filter((i) => i.campaign_id === body.campaign_id);
    expect(entries).toEqual([
      expect.objectContaining({
        action: 'campaign.create',
        actor: mcpKey.id,
        actor_kind: 'mcp',
        actor_name: 'Claude on the marketing laptop',
        user_id: null,
        campaign_id: body.campaign_id,
      }),
    ]);
    // the key itself is never written anywhere in the trail
    expect(JSON.stringify(audit.data)).not.toContain(mcpKey.key);
  });
});

describe('the app setting mcp_campaigns', () => {
  it('refuses creation through MCP while off, with MCP_CAMPAIGNS_DISABLED; the admin API still creates', async () => {
    const off = await c.admin.adminAppsUpdate({ path: { app_id: t.app.id }, body: { mcp_campaigns: false } });
    expect(off.data?.mcp_campaigns).toBe(false);
    const before = await campaignCount();
    const refused = refusal(await create({ schedule_type: 'trigger', trigger_event_name: 'purchase' }));
    expect(refused.code).toBe('MCP_CAMPAIGNS_DISABLED');
    // an audience prompt is not turned into an audience either
    const audiences = await c.server.db.knex('audiences').where({ app_id: t.app.id }).count({ n: '*' });
    refusal(
      await create({
        schedule_type: 'trigger',
        trigger_event_name: 'purchase',
        audience_prompt: 'users who did login',
      }),
    );
    expect(await c.server.db.knex('audiences').where({ app_id: t.app.id }).count({ n: '*' })).toEqual(audiences);
    expect(await campaignCount()).toBe(before);
    await createCampaign(c, t.app.id, { schedule_type: 'trigger', trigger_event_name: 'purchase' });
    expect(await campaignCount()).toBe(before + 1);

    const on = await c.admin.adminAppsUpdate({ path: { app_id: t.app.id }, body: { mcp_campaigns: true } });
    expect(on.data?.mcp_campaigns).toBe(true);
    await created({ schedule_type: 'trigger', trigger_event_name: 'purchase' });
  });

  it('is on for new apps', async () => {
    const other = await c.server.createTenant();
    const app = await c.admin.adminAppsGet({ path: { app_id: other.app.id } });
    expect(app.data?.mcp_campaigns).toBe(true);
  });
});
