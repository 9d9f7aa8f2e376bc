// MCP resource-style GET endpoints (X-MCP-API-Key, `read` permission checked by the security
// handler): server information and documentation, the key's identity, the organization's apps,
// versions, events, users and audiences. Every id is looked up within the key's organization:
// anything else is 404.

import { appForMcpKey } from '../admin/access.js';
import { organization } from '../admin/organizations.js';
import { versionHistoryView } from '../analytics/app-usage.js';
import { eventsPageView } from '../analytics/event-search.js';
import { appView, audienceRef, audienceView, resourceIndexView } from '../analytics/resource-views.js';
import { appAudiences } from '../audiences/members.js';
import type { ServiceContext } from '../context.js';
import { MCP_PROTOCOL_VERSION, MCP_SERVER_NAME, MCP_SERVER_VERSION } from '../mcp/constants.js';
import { mcpDocs } from '../mcp/docs.js';
import type { AppRow } from '../storage/tenancy.js';
import { userProfile } from '../tracking/user-profiles.js';
import { mcpPrincipal, type RequestContext } from './context.js';
import type { Handlers } from './operations.js';

/** The app an MCP request names (resolved and checked before the handler), else the organization's only app. */
export async function mcpApp(ctx: ServiceContext, request: RequestContext, appId?: string): Promise<AppRow> {
  if (appId !== undefined) return appForMcpKey(ctx.db, mcpPrincipal(request), appId);
  return request.app ?? appForMcpKey(ctx.db, mcpPrincipal(request));
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

type McpResourceOps =
  | 'Mcp_info'
  | 'Mcp_auth'
  | 'Mcp_docs'
  | 'Mcp_resources'
  | 'Mcp_getApp'
  | 'Mcp_appVersions'
  | 'Mcp_events'
  | 'Mcp_getUser'
  | 'Mcp_listAudiences'
  | 'Mcp_getAudience';

export function mcpResourceHandlers(ctx: ServiceContext): Handlers<McpResourceOps> {
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
    Mcp_resources: async (_input, request) => resourceIndexView(ctx, mcpPrincipal(request).organizationId),
    Mcp_getApp: async ({ path }, request) => appView(ctx, await mcpApp(ctx, request, path.appId)),
    Mcp_appVersions: async ({ path }, request) => versionHistoryView(ctx, await mcpApp(ctx, request, path.appId)),
    Mcp_events: async ({ query }, request) =>
      eventsPageView(ctx, await mcpApp(ctx, request), {
        eventName: query.event_name,
        userId: query.user_id,
        startDate: query.start_date,
        endDate: query.end_date,
        limit: query.limit ?? 100,
        offset: query.offset ?? 0,
      }),
    Mcp_getUser: async ({ path }, request) => {
      const user = await userProfile(ctx, (await mcpApp(ctx, request)).id, path.userId);
      return {
        id: user.id,
        external_id: user.external_id,
        email: user.email,
        phone: user.phone,
        properties: user.properties,
        origin: user.origin,
        created_at: user.created_at.toISOString(),
        last_active: iso(user.last_active),
        event_count: Number(user.event_count),
      };
    },
    Mcp_listAudiences: async (_input, request) => {
      const app = await mcpApp(ctx, request);
      const audiences = await appAudiences(ctx, app.id);
      return { audiences: audiences.map((a) => ({ ...audienceRef(a), user_count: Number(a.user_count) })) };
    },
    Mcp_getAudience: async ({ path }, request) =>
      audienceView(ctx, mcpPrincipal(request).organizationId, path.audienceId),
  };
}
