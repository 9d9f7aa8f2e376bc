// MCP resource-style GET endpoints (X-MCP-API-Key). Server information and the key's identity.
import type { Request, Response } from 'express';
import type { ServiceContext } from '../services/context.js';
import { findOrganization } from '../storage/tenancy.js';
import { mcpPrincipal } from './auth.js';

export const MCP_SERVER_NAME = 'tally';
export const MCP_SERVER_VERSION = '2.0.0';
export const MCP_PROTOCOL_VERSION = '2025-11-25';

export function mcpResourceHandlers(ctx: ServiceContext) {
  return {
    Mcp_info: (_req: Request, res: Response) => {
      res.json({
        name: MCP_SERVER_NAME,
        version: MCP_SERVER_VERSION,
        protocol_version: MCP_PROTOCOL_VERSION,
        status: 'ok',
        transport: 'streamable-http',
        timestamp: ctx.clock().toISOString(),
        documentation: '/mcp/docs',
      });
    },
    Mcp_auth: async (req: Request, res: Response) => {
      const principal = mcpPrincipal(req);
      const org = await findOrganization(ctx.db, principal.organizationId);
      if (!org) throw new Error(`organization ${principal.organizationId} of a live key is missing`);
      res.json({
        authenticated: true,
        organization: { id: org.id, name: org.name, description: org.description, timezone: org.timezone },
        permissions: principal.permissions,
        protocol_version: MCP_PROTOCOL_VERSION,
      });
    },
  };
}
