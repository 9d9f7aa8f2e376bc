// MCP resource-style GET endpoints (X-MCP-API-Key). Server information and the key's identity.

import { MCP_PROTOCOL_VERSION, MCP_SERVER_NAME, MCP_SERVER_VERSION } from '../mcp/constants.js';
import { mcpDocs } from '../mcp/docs.js';
import type { ServiceContext } from '../services/context.js';
import { organization } from '../services/organizations.js';
import { mcpPrincipal } from './context.js';
import type { Handlers } from './operations.js';

export function mcpResourceHandlers(ctx: ServiceContext): Handlers<'Mcp_info' | 'Mcp_auth' | 'Mcp_docs'> {
  return {
    Mcp_info: () => ({
      name: MCP_SERVER_NAME,
      version: MCP_SERVER_VERSION,
      protocol_version: MCP_PROTOCOL_VERSION,
      status: 'ok',
      transport: 'streamable-http',
      timestamp: ctx.clock().toISOString(),
      documentation: '/mcp/docs',
    }),
    Mcp_docs: (_input, request) => mcpDocs(ctx, ctx.config.publicBaseUrl ?? request.origin),
    Mcp_auth: async (_input, request) => {
      const principal = mcpPrincipal(request);
      const org = await organization(ctx, principal.organizationId);
      return {
        authenticated: true,
        organization: { id: org.id, name: org.name, description: org.description, timezone: org.timezone },
        permissions: [...principal.permissions],
        protocol_version: MCP_PROTOCOL_VERSION,
      };
    },
  };
}
