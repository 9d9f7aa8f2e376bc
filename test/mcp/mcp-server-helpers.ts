// What mcp-server.test.ts and mcp-server-tools.test.ts share: a server (one per file, set up by
// setUpMcpServer) with a tenant holding 30 events of 5 users, a tenant of another organization
// holding one secret event, and a read-only MCP key in the first tenant's organization; and short
// names for the MCP client helpers. `server`, `tenant`, `other` and `readOnly` are live bindings,
// set by the set-up.
import { afterAll, beforeAll } from 'vitest';
import { connectMcp, initializeRequest, mcpPost } from '../helpers/mcp-client.js';
import { startTestServer, type Tenant, type TestServer } from '../helpers/server.js';

export let server: TestServer;
export let tenant: Tenant;
export let other: Tenant;
export let readOnly: Tenant;

export const connect = connectMcp;
export const rpc = mcpPost;
export const initialize = initializeRequest;

/** Starts the server and writes the tenants and events before the file's tests; stops it after. */
export function setUpMcpServer(): void {
  beforeAll(async () => {
    server = await startTestServer();
    tenant = await server.createTenant();
    other = await server.createTenant();
    readOnly = await server.createTenant({ organizationId: tenant.organization.id, mcpPermissions: ['read'] });
    await tenant.client.eventsTrackBatch({
      body: {
        events: Array.from({ length: 30 }, (_, i) => ({
          user_id: `m-${i % 5}`,
          event_name: i % 3 === 0 ? 'purchase' : 'view_item',
          properties: i % 3 === 0 ? { revenue: 10 } : {},
        })),
      },
    });
    await other.client.eventsTrack({ body: { user_id: 'secret', event_name: 'OTHER-ORG-SECRET' } });
  }, 60_000);
  afterAll(() => server?.close());
}
