// The MCP v2 server's tools on the organization's data, through the SDK's own Client over
// Streamable HTTP on a real port: resources with tally:// URIs, the event dictionary and its
// definitions, write tools refused to a read-only key, no tool reaching another organization's app,
// push campaigns created, listed and read as the campaign GETs show them, and argument checks.
// Sessions, the tool list and the REST figures are in mcp-server.test.ts; the shared set-up is in
// mcp-server-helpers.ts.
import { createTallyClient } from '@tally/client';
import { describe, expect, it } from 'vitest';
import { TEST_ADMIN_TOKEN } from '../helpers/server.js';
import { connect, initialize, other, readOnly, rpc, server, setUpMcpServer, tenant } from './mcp-server-helpers.js';

setUpMcpServer();

describe('tools', () => {
  it("lists and reads the organization's resources with tally:// URIs, and nothing of another organization", async () => {
    const audience = await tenant.client.audiencesCreate({
      body: { app_id: tenant.app.id, name: 'Buyers', criteria: 'users who did purchase' },
    });
    expect(audience.response.status).toBe(200);
    await other.client.audiencesCreate({
      body: { app_id: other.app.id, name: 'OTHER-ORG-SECRET', criteria: 'all users' },
    });
    const { client } = await connect(server.url, tenant.mcpKey);
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri);
    expect(uris).toEqual(
      expect.arrayContaining([
        `tally://apps/${tenant.app.id}`,
        `tally://apps/${tenant.app.id}/event-dictionary`,
        `tally://audiences/${audience.data!.audience_id}`,
      ]),
    );
    expect(JSON.stringify(resources)).not.toContain(other.app.id);
    expect(JSON.stringify(resources)).not.toContain('OTHER-ORG-SECRET');
    const get = async (path: string) =>
      (await fetch(`${server.url}${path}`, { headers: { 'X-MCP-API-Key': tenant.mcpKey } })).json();
    const read = async (uri: string) =>
      JSON.parse(((await client.readResource({ uri })).contents[0] as { text: string }).text);
    expect(await read(`tally://apps/${tenant.app.id}`)).toEqual(await get(`/mcp/resources/apps/${tenant.app.id}`));
    expect(await read(`tally://audiences/${audience.data!.audience_id}`)).toEqual(
      await get(`/mcp/resources/audiences/${audience.data!.audience_id}`),
    );
    const dictionary = await read(`tally://apps/${tenant.app.id}/event-dictionary`);
    expect(dictionary.events.map((e: { event_name: string }) => e.event_name).sort()).toEqual([
      'purchase',
      'view_item',
    ]);
    await expect(client.readResource({ uri: `tally://apps/${other.app.id}` })).rejects.toThrow(/not found/);
    await client.close();
  });

  it('lists and defines tracked events', async () => {
    const { client } = await connect(server.url, tenant.mcpKey);
    const listed = await client.callTool({ name: 'list_event_dictionary', arguments: { app_id: tenant.app.id } });
    const events = (
      listed.structuredContent as { events: { event_name: string; volume_30d: number; defined: boolean }[] }
    ).events;
    expect(events.map((e) => [e.event_name, e.volume_30d, e.defined]).sort()).toEqual([
      ['purchase', 10, false],
      ['view_item', 20, false],
    ]);
    const defined = await client.callTool({
      name: 'update_event_definition',
      arguments: {
        app_id: tenant.app.id,
        event_name: 'purchase',
        description: 'A completed order',
        properties: { revenue: 'Order total' },
      },
    });
    expect(defined.structuredContent).toMatchObject({
      event_name: 'purchase',
      defined: true,
      properties: { revenue: 'Order total' },
    });
    const undefinedOnly = await client.callTool({
      name: 'list_event_dictionary',
      arguments: { app_id: tenant.app.id, only_undefined: true, search: 'VIEW' },
    });
    expect(
      (undefinedOnly.structuredContent as { events: { event_name: string }[] }).events.map((e) => e.event_name),
    ).toEqual(['view_item']);
    const missing = await client.callTool({
      name: 'update_event_definition',
      arguments: { app_id: tenant.app.id, event_name: 'never_tracked', description: 'x' },
    });
    expect(missing.isError).toBe(true);
    await client.close();
  });

  it('refuses write tools to a read-only key, with INSUFFICIENT_PERMISSIONS', async () => {
    const { client } = await connect(server.url, readOnly.mcpKey);
    for (const [name, args] of [
      ['update_event_definition', { app_id: tenant.app.id, event_name: 'purchase', description: 'x' }],
      ['create_audience', { app_id: tenant.app.id, name: 'x', description: 'users who did purchase' }],
      [
        'create_push_campaign',
        {
          app_id: tenant.app.id,
          name: 'x',
          title: 'x',
          message: 'x',
          schedule_type: 'trigger',
          trigger_event_name: 'purchase',
        },
      ],
    ] as const) {
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, name).toBe(true);
      expect((result.content as { text: string }[])[0]!.text, name).toMatch(/^INSUFFICIENT_PERMISSIONS/);
    }
    // reading works
    const read = await client.callTool({ name: 'list_event_dictionary', arguments: { app_id: tenant.app.id } });
    expect(read.isError).toBeFalsy();
    await client.close();
  });

  it("never reaches another organization's app through any tool", async () => {
    const admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
    const foreign = await admin.adminCampaignsCreate({
      path: { app_id: other.app.id },
      body: { name: 'OTHER-ORG-SECRET', title: 't', message: 'm', schedule_type: 'trigger', trigger_event_name: 'e' },
    });
    const { client } = await connect(server.url, tenant.mcpKey);
    const { tools } = await client.listTools();
    for (const tool of tools) {
      const args: Record<string, unknown> = { app_id: other.app.id };
      if (tool.name === 'get_metrics') args.metric = 'dau';
      if (tool.name === 'query_analytics') args.query = 'SELECT event_name FROM events';
      if (tool.name === 'create_audience') Object.assign(args, { name: 'x', description: 'all users' });
      if (tool.name === 'update_event_definition')
        Object.assign(args, { event_name: 'OTHER-ORG-SECRET', description: 'x' });
      if (tool.name === 'get_funnel') args.events = ['OTHER-ORG-SECRET', 'purchase'];
      if (tool.name === 'create_push_campaign')
        Object.assign(args, { name: 'x', title: 'x', message: 'x', schedule_type: 'trigger', trigger_event_name: 'e' });
      if (tool.name === 'get_campaign_status') Object.assign(args, { campaign_id: foreign.data!.campaign_id });
      const result = await client.callTool({ name: tool.name, arguments: args });
      expect(result.isError, tool.name).toBe(true);
      expect(JSON.stringify(result), tool.name).not.toContain('OTHER-ORG-SECRET');
      expect((result.content as { text: string }[])[0]!.text, tool.name).toMatch(/^NOT_FOUND/);
    }
    await client.close();
  });

  it('creates, lists and reads push campaigns through the tools, as the campaign GETs and resources show them', async () => {
    const { client } = await connect(server.url, tenant.mcpKey);
    const now = await client.callTool({
      name: 'create_push_campaign',
      arguments: { app_id: tenant.app.id, name: 'x', title: 'x', message: 'x', schedule_type: 'now' },
    });
    expect(now.isError).toBe(true); // immediate sends are refused through MCP
    const created = await client.callTool({
      name: 'create_push_campaign',
      arguments: {
        app_id: tenant.app.id,
        name: 'Buyers thanks',
        title: 'Thank you',
        message: 'Thanks {{first_name}}',
        schedule_type: 'trigger',
        trigger_event_prompt: 'when a user makes a purchase',
        audience_prompt: 'users who did purchase',
      },
    });
    expect(created.isError).toBeFalsy();
    const c = created.structuredContent as {
      campaign_id: string;
      status: string;
      trigger: { event_name: string; match_method: string; available_events_count: number };
      audience: { auto_created: boolean; user_count: number };
    };
    expect(c.status).toBe('scheduled');
    expect(c.trigger).toEqual({ event_name: 'purchase', match_method: 'fuzzy', available_events_count: 2 });
    expect(c.audience).toMatchObject({ auto_created: true, user_count: 5 });
    const get = async (path: string) =>
      (await fetch(`${server.url}${path}`, { headers: { 'X-MCP-API-Key': tenant.mcpKey } })).json();
    const listed = await client.callTool({ name: 'list_push_campaigns', arguments: { app_id: tenant.app.id } });
    expect(listed.structuredContent).toEqual(await get(`/mcp/resources/campaigns?app_id=${tenant.app.id}`));
    expect((listed.structuredContent as { campaigns: { id: string }[] }).campaigns.map((x) => x.id)).toContain(
      c.campaign_id,
    );
    const status = await client.callTool({ name: 'get_campaign_status', arguments: { campaign_id: c.campaign_id } });
    const detail = await get(`/mcp/resources/campaigns/${c.campaign_id}`);
    expect(status.structuredContent).toEqual(detail);
    expect(detail).toMatchObject({
      id: c.campaign_id,
      status: 'scheduled',
      trigger_event: 'purchase',
      message: 'Thanks {{first_name}}',
    });
    const read = await client.readResource({ uri: `tally://campaigns/${c.campaign_id}` });
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toEqual(detail);
    const { resources } = await client.listResources();
    expect(resources.map((r) => r.uri)).toContain(`tally://campaigns/${c.campaign_id}`);
    await client.close();
  });

  it('checks arguments: a bad metric and a NUL byte are refused', async () => {
    const { client } = await connect(server.url, tenant.mcpKey);
    const bad = await client.callTool({ name: 'get_metrics', arguments: { app_id: tenant.app.id, metric: 'nope' } });
    expect(bad.isError).toBe(true);
    await client.close();
    const opened = await rpc(server.url, tenant.mcpKey, initialize());
    const id = opened.headers.get('mcp-session-id')!;
    const nul = await rpc(
      server.url,
      tenant.mcpKey,
      {
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'query_analytics', arguments: { query: 'a\u0000b' } },
      },
      { 'Mcp-Session-Id': id },
    );
    expect(nul.status).toBe(400);
    expect(((await nul.json()) as { error: { code: number } }).error.code).toBe(-32602);
  });
});
