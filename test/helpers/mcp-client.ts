// MCP as a real client speaks it: the SDK's own Client over Streamable HTTP against a started
// server, and raw JSON-RPC POSTs for what the client hides (status codes, headers).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/** Connects (initialize + initialized) with the key in X-MCP-API-Key, or with `headers` alone when `key` is null. */
export async function connectMcp(url: string, key: string | null, headers: Record<string, string> = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { ...(key === null ? {} : { 'X-MCP-API-Key': key }), ...headers } },
  });
  const client = new Client({ name: 'tally-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, sessionId: transport.sessionId! };
}

/** One JSON-RPC POST to /mcp. */
export const mcpPost = (url: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      'X-MCP-API-Key': key,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...headers,
    },
    body: JSON.stringify(body),
  });

export const initializeRequest = (id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
});
