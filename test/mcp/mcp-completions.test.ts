// completion/complete through the SDK's client over HTTP: every argument of our prompts and
// every variable of our resource templates is completed from the caller's organization (app ids
// by id or name, event names, property keys, audience and campaign ids), never from another
// organization's apps, events or properties, even when the other organization's app id is named
// in the context; an unknown prompt or template is -32602.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createTallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp } from '../helpers/mcp-client.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let mine: Tenant;
let second: Tenant;
let other: Tenant;
let client: Client;
let audienceId: string;
let campaignId: string;

/** Strings that exist only in the other organization. */
const SECRETS = ['secret_event', 'secret_key', 'secret_user_key', 'Secret app'];

const prompt = (name: string, argument: string, value: string, context?: Record<string, string>) =>
  client.complete({
    ref: { type: 'ref/prompt', name },
    argument: { name: argument, value },
    ...(context ? { context: { arguments: context } } : {}),
  });
const template = (uri: string, argument: string, value: string) =>
  client.complete({ ref: { type: 'ref/resource', uri }, argument: { name: argument, value } });

beforeAll(async () => {
  server = await startTestServer();
  mine = await server.createTenant();
  second = await server.createTenant({ organizationId: mine.organization.id });
  other = await server.createTenant();
  const admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
  await admin.adminAppsUpdate({ path: { app_id: mine.app.id }, body: { name: 'Shop' } });
  await admin.adminAppsUpdate({ path: { app_id: other.app.id }, body: { name: 'Secret app' } });
  await mine.client.usersUpsert({ body: { user_id: 'u1', properties: { plan: 'pro', country: 'FR' } } });
  await mine.client.eventsTrackBatch({
    body: {
      events: [
        { user_id: 'u1', event_name: 'view_item', properties: { sku: 'a' } },
        { user_id: 'u1', event_name: 'add_to_cart', properties: { sku: 'a' } },
        { user_id: 'u1', event_name: 'purchase', properties: { revenue: 10 } },
      ],
    },
  });
  await second.client.eventsTrack({ body: { user_id: 'u2', event_name: 'second_app_event' } });
  await other.client.usersUpsert({ body: { user_id: 'x', properties: { secret_user_key: 1 } } });
  await other.client.eventsTrack({ body: { user_id: 'x', event_name: 'secret_event', properties: { secret_key: 1 } } });
  const audience = await mine.client.audiencesCreate({
    body: { app_id: mine.app.id, name: 'Buyers', criteria: 'users who did purchase' },
  });
  audienceId = audience.data!.audience_id;
  const campaign = await admin.adminCampaignsCreate({
    path: { app_id: mine.app.id },
    body: { name: 'Welcome back', title: 't', message: 'm', schedule_type: 'trigger', trigger_event_name: 'purchase' },
  });
  campaignId = campaign.data!.campaign_id;
  await admin.adminCampaignsCreate({
    path: { app_id: other.app.id },
    body: { name: 'Secret campaign', title: 't', message: 'm', schedule_type: 'trigger', trigger_event_name: 'e' },
  });
  ({ client } = await connectMcp(server.url, mine.mcpKey));
}, 60_000);
afterAll(async () => {
  await client?.close();
  await server?.close();
});

describe('completion/complete', () => {
  it('is declared, and completes every prompt argument and resource-template variable', async () => {
    expect(client.getServerCapabilities()).toMatchObject({ completions: {} });
    const { prompts } = await client.listPrompts();
    for (const p of prompts) {
      for (const a of p.arguments ?? []) {
        const { completion } = await prompt(p.name, a.name, '');
        expect(completion.values.length, `${p.name}.${a.name}`).toBeGreaterThan(0);
        expect(JSON.stringify(completion), `${p.name}.${a.name}`).not.toMatch(new RegExp(SECRETS.join('|')));
      }
    }
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.length).toBeGreaterThan(0);
    for (const t of resourceTemplates) {
      for (const variable of t.uriTemplate.match(/\{(\w+)\}/g)!.map((v) => v.slice(1, -1))) {
        const { completion } = await template(t.uriTemplate, variable, '');
        expect(completion.values.length, `${t.uriTemplate} ${variable}`).toBeGreaterThan(0);
        expect(completion.values, t.uriTemplate).not.toContain(other.app.id);
      }
    }
  });

  it("offers the organization's app ids, by id or by name, and never another organization's", async () => {
    expect((await prompt('weekly_engagement_report', 'app_id', '')).completion.values.sort()).toEqual(
      [mine.app.id, second.app.id].sort(),
    );
    expect((await prompt('weekly_engagement_report', 'app_id', 'sho')).completion.values).toEqual([mine.app.id]);
    expect((await prompt('weekly_engagement_report', 'app_id', mine.app.id.slice(0, 13))).completion.values).toContain(
      mine.app.id,
    );
    expect((await prompt('weekly_engagement_report', 'app_id', 'Secret')).completion.values).toEqual([]);
    expect((await prompt('weekly_engagement_report', 'app_id', other.app.id)).completion.values).toEqual([]);
    expect((await template('tally://apps/{appId}', 'appId', other.app.id.slice(0, 20))).completion.values).toEqual([]);
  });

  it("offers event names and property keys of the named app, or of the organization's apps, never another's", async () => {
    const all = (await prompt('funnel_diagnosis', 'events', '')).completion.values;
    expect(all).toEqual(expect.arrayContaining(['view_item', 'add_to_cart', 'purchase', 'second_app_event']));
    expect(all).not.toContain('secret_event');
    const named = (await prompt('funnel_diagnosis', 'events', '', { app_id: mine.app.id })).completion.values;
    expect(named.sort()).toEqual(['add_to_cart', 'purchase', 'view_item']);
    // the last item of the comma-separated list is completed
    expect((await prompt('funnel_diagnosis', 'events', 'view_item,AD')).completion.values).toEqual([
      'view_item,add_to_cart',
    ]);
    // another organization's app named in the context gives nothing
    expect((await prompt('funnel_diagnosis', 'events', 'sec', { app_id: other.app.id })).completion.values).toEqual([]);
    expect((await prompt('funnel_diagnosis', 'events', 'secret')).completion.values).toEqual([]);
    const keys = (await prompt('funnel_diagnosis', 'compare_by', '', { app_id: mine.app.id })).completion.values;
    expect(keys).toEqual(expect.arrayContaining(['plan', 'country', 'sku', 'revenue']));
    expect((await prompt('funnel_diagnosis', 'compare_by', 'secret')).completion.values).toEqual([]);
  });

  it('offers audience and campaign ids by id or name', async () => {
    expect((await template('tally://audiences/{audienceId}', 'audienceId', 'buy')).completion.values).toEqual([
      audienceId,
    ]);
    expect((await template('tally://campaigns/{campaignId}', 'campaignId', 'welcome')).completion.values).toEqual([
      campaignId,
    ]);
    expect((await template('tally://campaigns/{campaignId}', 'campaignId', 'secret')).completion.values).toEqual([]);
  });

  it('answers -32602 for a prompt or template it does not have, and nothing for an unknown argument', async () => {
    await expect(prompt('test_prompt_with_arguments', 'arg1', '')).rejects.toMatchObject({ code: -32602 });
    await expect(prompt('constructor', 'x', '')).rejects.toMatchObject({ code: -32602 });
    await expect(template('tally://nothing/{id}', 'id', '')).rejects.toMatchObject({ code: -32602 });
    expect((await prompt('funnel_diagnosis', 'no_such_argument', '')).completion).toEqual({
      values: [],
      total: 0,
      hasMore: false,
    });
  });
});
