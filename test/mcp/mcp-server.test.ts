// The MCP v2 JSON-RPC server through the SDK's own Client over Streamable HTTP on a real port:
// initialize and sessions (database-backed: idle expiry, DELETE, served by a second instance), the
// tool list and its documentation, and the same figures as REST. What the tools do with the
// organization's data (resources, the event dictionary, permissions, tenancy, campaigns, argument
// checks) is in mcp-server-tools.test.ts, the session cap in mcp-sessions.test.ts, output schemas in
// mcp-tool-outputs.test.ts; the shared set-up is in mcp-server-helpers.ts.
import { createTallyClient } from '@tally/client';
import { describe, expect, inject, it } from 'vitest';
import { startServerProcess } from '../helpers/process-server.js';
import { startTestServer, TEST_ADMIN_TOKEN } from '../helpers/server.js';
import { connect, initialize, other, rpc, server, setUpMcpServer, tenant } from './mcp-server-helpers.js';

setUpMcpServer();

describe('initialize and sessions', () => {
  it('negotiates 2025-11-25 and names the session in the result and both headers', async () => {
    const res = await rpc(server.url, tenant.mcpKey, initialize());
    expect(res.status).toBe(200);
    const id = res.headers.get('mcp-session-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers.get('x-mcp-session-id')).toBe(id);
    const body = (await res.json()) as { result: Record<string, unknown> };
    expect(body.result).toMatchObject({
      protocolVersion: '2025-11-25',
      serverInfo: { name: 'tally', version: '2.0.0' },
      transport: { type: 'streamable-http', sessionId: id },
    });
    // only what is served: no list-changed notifications, no resource subscriptions
    expect(body.result.capabilities).toEqual({ tools: {}, resources: {}, prompts: {}, logging: {}, completions: {} });
  });

  it('works with the SDK client, and with the session carried by X-MCP-Session-Id alone', async () => {
    const { client, transport } = await connect(server.url, tenant.mcpKey);
    expect(client.getServerVersion()).toMatchObject({ name: 'tally', version: '2.0.0' });
    const id = transport.sessionId!;
    await client.close();
    const res = await rpc(
      server.url,
      tenant.mcpKey,
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { 'X-MCP-Session-Id': id },
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result: { tools: { name: string }[] } };
    expect(body.result.tools.map((t) => t.name)).toContain('query_analytics');
  });

  it('answers 400 without a session, 404 for an unknown or expired one, and another key cannot use it', async () => {
    const list = { jsonrpc: '2.0', id: 3, method: 'tools/list' };
    expect((await rpc(server.url, tenant.mcpKey, list)).status).toBe(400);
    const unknown = await rpc(server.url, tenant.mcpKey, list, {
      'Mcp-Session-Id': '00000000-0000-4000-8000-000000000000',
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: number } }).error.code).toBe(-32001);
    const opened = await rpc(server.url, tenant.mcpKey, initialize());
    const id = opened.headers.get('mcp-session-id')!;
    expect((await rpc(server.url, other.mcpKey, list, { 'Mcp-Session-Id': id })).status).toBe(404);
    await server.db
      .knex('mcp_sessions')
      .where({ id })
      .update({ last_seen_at: new Date(Date.now() - 31 * 60_000) });
    expect((await rpc(server.url, tenant.mcpKey, list, { 'Mcp-Session-Id': id })).status).toBe(404);
  });

  it('closes a session with DELETE', async () => {
    const opened = await rpc(server.url, tenant.mcpKey, initialize());
    const id = opened.headers.get('mcp-session-id')!;
    const closed = await fetch(`${server.url}/mcp`, {
      method: 'DELETE',
      headers: { 'X-MCP-API-Key': tenant.mcpKey, 'Mcp-Session-Id': id },
    });
    expect(closed.status).toBe(200);
    const after = await rpc(
      server.url,
      tenant.mcpKey,
      { jsonrpc: '2.0', id: 2, method: 'ping' },
      { 'Mcp-Session-Id': id },
    );
    expect(after.status).toBe(404);
  });

  it('is served by a second server instance on the same database', async () => {
    const second = await startTestServer({}, { database: server.db });
    try {
      const { client, transport } = await connect(server.url, tenant.mcpKey);
      const id = transport.sessionId!;
      await client.close();
      const res = await rpc(
        second.url,
        tenant.mcpKey,
        { jsonrpc: '2.0', id: 9, method: 'tools/list' },
        { 'Mcp-Session-Id': id },
      );
      expect(res.status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it.runIf(process.env.TEST_DATABASE_URL)(
    'is resumed by a second server process on the same PostgreSQL database',
    async () => {
      const target = inject('database');
      if (target.kind !== 'postgres') return;
      const second = await startServerProcess({ DATABASE_URL: target.url, ADMIN_TOKEN: TEST_ADMIN_TOKEN });
      try {
        const { client, transport } = await connect(server.url, tenant.mcpKey);
        const id = transport.sessionId!;
        await client.close();
        // the other process carries on with the session the first one opened
        const res = await rpc(
          second.url,
          tenant.mcpKey,
          { jsonrpc: '2.0', id: 9, method: 'tools/list' },
          { 'Mcp-Session-Id': id },
        );
        expect(res.status).toBe(200);
        const body = (await res.json()) as { result: { tools: unknown[] } };
        expect(body.result.tools.length).toBeGreaterThan(3);
      } finally {
        await second.stop();
      }
    },
    90_000,
  );

  it('answers GET with an event stream 405, which the SDK client accepts', async () => {
    const res = await fetch(`${server.url}/mcp`, {
      headers: { 'X-MCP-API-Key': tenant.mcpKey, accept: 'text/event-stream', 'Mcp-Session-Id': 'x' },
    });
    expect(res.status).toBe(405);
  });
});

describe('tools', () => {
  it('lists every tool with a title, a description, input and output schemas and annotations', async () => {
    const { client } = await connect(server.url, tenant.mcpKey);
    const { tools } = await client.listTools();
    for (const tool of tools) {
      expect(tool.title, tool.name).toBeTruthy();
      expect(tool.description!.length, tool.name).toBeGreaterThan(80);
      expect(tool.inputSchema.type).toBe('object');
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      expect(tool.annotations).toMatchObject({ readOnlyHint: expect.any(Boolean), openWorldHint: false });
    }
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(['weekly_engagement_report', 'funnel_diagnosis']);
    await client.close();
  });

  it('documents exactly the registered tools at GET /mcp/docs', async () => {
    const res = await fetch(`${server.url}/mcp/docs`, { headers: { 'X-MCP-API-Key': tenant.mcpKey } });
    expect(res.status).toBe(200);
    const docs = (await res.json()) as {
      methods: string[];
      tools: { name: string; description: string; inputSchema: unknown }[];
      editor_config: { mcpServers: Record<string, { url: string; headers: Record<string, string> }> };
    };
    expect(docs.methods).toEqual(expect.arrayContaining(['initialize', 'tools/list', 'tools/call']));
    const { client } = await connect(server.url, tenant.mcpKey);
    const { tools } = await client.listTools();
    expect(docs.tools).toEqual(
      tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })),
    );
    expect(docs.editor_config.mcpServers.tally).toMatchObject({
      url: `${server.url}/mcp`,
      headers: { 'X-MCP-API-Key': expect.any(String) },
    });
    await client.close();
  });

  it('gives the same figures as REST for get_metrics and query_analytics', async () => {
    const { client } = await connect(server.url, tenant.mcpKey);
    const mcp = await client.callTool({ name: 'get_metrics', arguments: { app_id: tenant.app.id, metric: 'dau' } });
    expect(mcp.isError).toBeFalsy();
    const rest = await tenant.client.analyticsMetrics({ query: { app_id: tenant.app.id, metric: 'dau' } });
    expect(mcp.structuredContent).toEqual(rest.data);
    const sql = 'SELECT event_name, count(*) AS n FROM events GROUP BY 1 ORDER BY 1';
    const q = await client.callTool({ name: 'query_analytics', arguments: { app_id: tenant.app.id, query: sql } });
    const r = await tenant.client.analyticsQuery({ body: { app_id: tenant.app.id, query: sql } });
    expect((q.structuredContent as { data: unknown }).data).toEqual(r.data!.data);
    expect((q.structuredContent as { data: unknown }).data).toEqual([
      { event_name: 'purchase', n: 10 },
      { event_name: 'view_item', n: 20 },
    ]);
    // the text quotes the data after saying it is data, not instructions
    const text = (q.content as { type: string; text: string }[])[0]!.text;
    expect(text).toMatch(/data recorded by the app/);
    await client.close();
  });

  it('answers query_events, get_funnel and get_app_versions exactly as the MCP GETs', async () => {
    const admin = createTallyClient({ baseUrl: server.url, adminToken: TEST_ADMIN_TOKEN });
    for (const [version, at] of [
      ['1.0', '2026-01-10T09:00:00Z'],
      ['1.1', '2026-02-10T09:00:00Z'],
      ['2.0', '2026-03-10T09:00:00Z'],
    ] as const) {
      const added = await admin.adminVersionsAdd({
        path: { app_id: tenant.app.id },
        body: { version, released_at: at },
      });
      expect(added.response.status).toBe(200);
    }
    const { client } = await connect(server.url, tenant.mcpKey);
    const get = async (path: string) =>
      (await fetch(`${server.url}${path}`, { headers: { 'X-MCP-API-Key': tenant.mcpKey } })).json();
    const events = await client.callTool({
      name: 'query_events',
      arguments: { app_id: tenant.app.id, event_name: 'purchase', limit: 3, offset: 1 },
    });
    expect(events.isError).toBeFalsy();
    expect(events.structuredContent).toEqual(
      await get(`/mcp/events?app_id=${tenant.app.id}&event_name=purchase&limit=3&offset=1`),
    );
    expect((events.structuredContent as { pagination: unknown }).pagination).toEqual({
      total: 10,
      limit: 3,
      offset: 1,
      has_more: true,
    });
    const funnel = await client.callTool({
      name: 'get_funnel',
      arguments: { app_id: tenant.app.id, events: ['view_item', 'purchase'], time_window: 3 },
    });
    expect(funnel.isError).toBeFalsy();
    expect(funnel.structuredContent).toEqual(
      await get(`/mcp/analytics/funnels?app_id=${tenant.app.id}&events=view_item,purchase&time_window=3`),
    );
    const versions = await client.callTool({ name: 'get_app_versions', arguments: { app_id: tenant.app.id } });
    expect(versions.structuredContent).toEqual(await get(`/mcp/resources/apps/${tenant.app.id}/versions`));
    const february = await client.callTool({
      name: 'get_app_versions',
      arguments: { app_id: tenant.app.id, start_date: '2026-02-01', end_date: '2026-02-28' },
    });
    expect(february.structuredContent).toMatchObject({
      current_version: '2.0',
      total: 1,
      versions: [{ version: '1.1' }],
    });
    await client.close();
  });
});
