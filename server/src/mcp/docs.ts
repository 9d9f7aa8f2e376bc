// What the MCP server says of itself: GET /mcp/info (name, version, status) and GET /mcp/docs (how
// to use it). The tools are listed from the server itself (an in-memory client asks it
// tools/list), so the documentation can never drift from what is registered.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpDocs, McpServerInfo } from '@tally/client';
import type { ServiceContext } from '../context.js';
import { MCP_PROTOCOL_VERSION, MCP_SERVER_NAME, MCP_SERVER_VERSION } from './constants.js';
import { createMcpServer } from './server.js';

export const JSON_RPC_METHODS = [
  'initialize',
  'notifications/initialized',
  'ping',
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'logging/setLevel',
  'completion/complete',
];

let registered: Promise<{ name: string; description: string; inputSchema?: Record<string, unknown> }[]> | null = null;

/** The tools as tools/list presents them (computed once: the registrations do not change at run time). */
function registeredTools(ctx: ServiceContext) {
  registered ??= (async () => {
    const server = createMcpServer(ctx, { kind: 'mcp', keyId: '', organizationId: '', permissions: [], keyName: '' });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'tally-docs', version: MCP_SERVER_VERSION });
    await client.connect(clientSide);
    const { tools } = await client.listTools();
    await client.close();
    await server.close();
    return tools.map((t) => ({ name: t.name, description: t.description ?? '', inputSchema: t.inputSchema }));
  })();
  return registered;
}

export const serverInfoView = (now: Date): McpServerInfo => ({
  name: MCP_SERVER_NAME,
  version: MCP_SERVER_VERSION,
  protocol_version: MCP_PROTOCOL_VERSION,
  status: 'ok',
  transport: 'streamable-http',
  timestamp: now.toISOString(),
  documentation: '/mcp/docs',
});

export async function mcpDocs(ctx: ServiceContext, baseUrl: string): Promise<McpDocs> {
  return {
    name: MCP_SERVER_NAME,
    version: MCP_SERVER_VERSION,
    protocol_version: MCP_PROTOCOL_VERSION,
    methods: JSON_RPC_METHODS,
    tools: await registeredTools(ctx),
    editor_config: {
      mcpServers: {
        tally: { type: 'http', url: `${baseUrl}/mcp`, headers: { 'X-MCP-API-Key': '<your MCP API key>' } },
      },
    },
  };
}
