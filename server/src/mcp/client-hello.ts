// A request after initialize runs on a new server object (any instance serves any session), which
// has not seen the client's initialize: without it the SDK would treat the client as declaring no
// capabilities and refuse to ask it anything (elicitation). So the initialize stored with the
// session is replayed into the new server through an in-memory pair, and its answer dropped,
// before the server is connected to the request's own transport: public API only.
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import type { ClientHello } from './sessions.js';

const text = (value: unknown, fallback: string) => (typeof value === 'string' && value !== '' ? value : fallback);

export async function replayInitialize(server: McpServer, hello: ClientHello): Promise<void> {
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const answered = new Promise<void>((resolve) => {
    client.onmessage = () => resolve();
  });
  await server.server.connect(serverSide);
  await client.send({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: {
      protocolVersion: text(hello.protocolVersion, LATEST_PROTOCOL_VERSION),
      capabilities: hello.capabilities,
      clientInfo: {
        ...hello.clientInfo,
        name: text(hello.clientInfo.name, 'unknown'),
        version: text(hello.clientInfo.version, '0'),
      },
    },
  });
  await answered;
  await server.server.close();
}

/** Whether the client declared it can show a form and return what the person chose (`elicitation: {}` counts). */
export function canConfirm(server: McpServer): boolean {
  return server.server.getClientCapabilities()?.elicitation?.form !== undefined;
}
