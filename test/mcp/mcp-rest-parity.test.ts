// Each result is shaped once (the wings' views.ts): where REST and MCP return the same data, a
// drift between two shapes would show here. The REST side is called with the generated client
// (@tally/client, every body validated against the contract), the MCP side with the SDK's Client
// after listing the tools (it checks every structuredContent against the advertised outputSchema)
// and with resources/read. Pairs that answer the same question on the same data are equal; pairs
// whose wrapping differs by design (the admin API's `success` flag, the fields create_audience
// leaves out) are compared through that documented wrapping.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { createTallyClient, type TallyClient } from '@tally/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp } from '../helpers/mcp-client.js';
import { startTestServer, TEST_ADMIN_TOKEN, type Tenant, type TestServer } from '../helpers/server.js';

let server: TestServer;
let tenant: Tenant;
let client: Client;
let mcpRest: TallyClient;
let admin: TallyClient;
let appId: string;
let audienceId: string;
let campaignId: string;

const PERIOD = { start_date: '2026-03-01', end_date: '2026-03-07' };
const EVENTS = [
  { user_id: 'ann', event_name: 'signup', timestamp: '2026-03-01T10:00:00Z', properties: { plan: 'pro' } },
  { user_id: 'ann', event_name: 'view_item', timestamp: '2026-03-02T10:00:00Z', properties: { item: 'a' } },
  { user_id: 'ann', event_name: 'purchase', timestamp: '2026-03-02T11:00:00Z', properties: { revenue: 12 } },
  { user_id: 'ben', event_name: 'signup', timestamp: '2026-03-03T09:00:00Z' },
  { user_id: 'ben', event_name: 'view_item', timestamp: '2026-03-04T09:00:00Z', properties: { item: 'b' } },
  { user_id: 'cy', event_name: 'signup', timestamp: '2026-03-05T09:00:00Z' },
];
const CAMPAIGN = {
  name: 'Thanks',
  title: 'Thank you',
  message: 'Thanks {{first_name}}',
  schedule_type: 'trigger',
  trigger_event_name: 'purchase',
} as const;

/** A tool's structuredContent (the SDK client has checked it against the tool's outputSchema). */
async function tool(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const result = await client.callTool({ name, arguments: args });
  expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy();
  return result.structuredContent as Record<string, unknown>;
}

/** A resource's JSON body, read through resources/read. */
async function resource(uri: string): Promise<unknown> {
  const read = await client.readResource({ uri });
  return JSON.parse((read.contents[0] as { text: string }).text);
}

/** The body of a REST call that must succeed. */
function body<T>(res: { data?: T; error?: unknown }): T {
  expect(res.error).toBeUndefined();
  return res.data!;
}

beforeAll(async () => {
  server = await startTestServer();
  tenant = await server.createTenant();
  appId = tenant.app.id;
  admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
  mcpRest = createTallyClient({ baseUrl: server.url, mcpApiKey: tenant.mcpKey });
  body(await tenant.client.eventsTrackBatch({ body: { events: EVENTS } }));
  body(
    await admin.adminVersionsAdd({
      path: { app_id: appId },
      body: { version: '1.0', released_at: '2026-03-02T09:00:00Z' },
    }),
  );
  const audience = body(
    await tenant.client.audiencesCreate({
      body: { app_id: appId, name: 'Buyers', criteria: 'users who did purchase' },
    }),
  );
  audienceId = audience.audience_id;
  campaignId = body(await admin.adminCampaignsCreate({ path: { app_id: appId }, body: CAMPAIGN })).campaign_id;
  ({ client } = await connectMcp(server.url, tenant.mcpKey));
  await client.listTools(); // the client checks structuredContent against the schemas it listed
}, 60_000);
afterAll(async () => {
  await client?.close();
  await server?.close();
});

describe('analytics: REST and MCP give the same body', () => {
  it('GET /v1/analytics/metrics and get_metrics', async () => {
    for (const [metric, granularity] of [
      ['dau', 'day'],
      ['revenue', 'week'],
      ['conversion', 'day'],
    ] as const) {
      const query = { app_id: appId, metric, granularity, ...PERIOD };
      const rest = body(await tenant.client.analyticsMetrics({ query }));
      expect(await tool('get_metrics', query), `${metric} by ${granularity}`).toEqual(rest);
    }
  });

  it('POST /v1/analytics/query and query_analytics (only the time taken differs)', async () => {
    const query = 'SELECT event_name, count(*) AS n FROM events GROUP BY 1 ORDER BY 1';
    const rest = body(await tenant.client.analyticsQuery({ body: { app_id: appId, query } }));
    const mcp = await tool('query_analytics', { app_id: appId, query });
    expect({ ...mcp, query_time_ms: 0 }).toEqual({ ...rest, query_time_ms: 0 });
  });

  it('GET /mcp/analytics/funnels and get_funnel', async () => {
    const events = ['signup', 'view_item', 'purchase'];
    const rest = body(await mcpRest.mcpFunnels({ query: { app_id: appId, events, time_window: 3, ...PERIOD } }));
    expect(await tool('get_funnel', { app_id: appId, events, time_window: 3, ...PERIOD })).toEqual(rest);
  });

  it('GET /mcp/events and query_events', async () => {
    const query = { app_id: appId, event_name: 'signup', limit: 2, offset: 1 };
    expect(await tool('query_events', query)).toEqual(body(await mcpRest.mcpEvents({ query })));
  });

  it('GET /mcp/resources/apps/{id}/versions and get_app_versions', async () => {
    const rest = body(await mcpRest.mcpAppVersions({ path: { appId } }));
    expect(await tool('get_app_versions', { app_id: appId })).toEqual(rest);
  });

  it('GET /mcp/resources/apps/{id} and the resource tally://apps/{id}', async () => {
    expect(await resource(`tally://apps/${appId}`)).toEqual(body(await mcpRest.mcpGetApp({ path: { appId } })));
  });

  it('list_event_dictionary and the resource tally://apps/{id}/event-dictionary', async () => {
    const listed = await tool('list_event_dictionary', { app_id: appId, include_archived: true, limit: 500 });
    expect(await resource(`tally://apps/${appId}/event-dictionary`)).toEqual(listed);
  });
});

describe('campaigns: REST and MCP give the same body', () => {
  it('the detail: admin API (with its success flag), GET /mcp/resources/campaigns/{id}, get_campaign_status, resources/read', async () => {
    const { success, ...detail } = body(await admin.adminCampaignsGet({ path: { campaign_id: campaignId } }));
    expect(success).toBe(true);
    expect(body(await mcpRest.mcpGetCampaign({ path: { campaignId } }))).toEqual(detail);
    expect(await tool('get_campaign_status', { campaign_id: campaignId })).toEqual(detail);
    expect(await resource(`tally://campaigns/${campaignId}`)).toEqual(detail);
  });

  it('the list: GET /mcp/resources/campaigns and list_push_campaigns, whose entries are the admin list items', async () => {
    const rest = body(await mcpRest.mcpListCampaigns({ query: { app_id: appId, limit: 50 } }));
    expect(await tool('list_push_campaigns', { app_id: appId, limit: 50 })).toEqual(rest);
    const items = body(await admin.adminCampaignsList({ path: { app_id: appId } })).items;
    expect(rest.campaigns).toEqual(items);
  });

  it('a new campaign: the admin API body is the tool body with the success flag (ids, creator and first send aside)', async () => {
    const rest = body(
      await admin.adminCampaignsCreate({ path: { app_id: appId }, body: { ...CAMPAIGN, audience_id: audienceId } }),
    );
    const mcp = await tool('create_push_campaign', { app_id: appId, ...CAMPAIGN, audience_id: audienceId });
    expect(Object.keys(rest)).toEqual(['success', ...Object.keys(mcp)]);
    // Set by who asked and when: the admin's campaign starts at once, a model's after the lead time.
    const aside = { campaign_id: '', created_by: null, scheduled_at: null };
    expect({ ...mcp, ...aside, success: true }).toEqual({ ...rest, ...aside });
    expect(mcp.created_by).toMatchObject({ kind: 'mcp' });
    expect(rest.created_by).toMatchObject({ kind: 'admin' });
  });
});

describe('audiences: REST and MCP give the same body', () => {
  it('POST /v1/audiences and create_audience: the tool body is the REST body without success, created_at and message', async () => {
    const input = { name: 'Pro buyers', criteria: 'users who did purchase' };
    const rest = body(await tenant.client.audiencesCreate({ body: { app_id: appId, ...input } }));
    const mcp = await tool('create_audience', { app_id: appId, name: input.name, description: input.criteria });
    const { success: _s, created_at: _c, message: _m, ...brief } = rest;
    expect(Object.keys(mcp)).toEqual(Object.keys(brief));
    expect({ ...mcp, audience_id: '' }).toEqual({ ...brief, audience_id: '' });
  });

  it('GET /mcp/resources/audiences/{id} and the resource tally://audiences/{id}', async () => {
    const rest = body(await mcpRest.mcpGetAudience({ path: { audienceId } }));
    expect(await resource(`tally://audiences/${audienceId}`)).toEqual(rest);
  });
});
