// MCP resource-style GET endpoints (X-MCP-API-Key, `read` permission checked by the security
// handler): server information and documentation, the key's identity, the organization's apps,
// versions, events, users and audiences. Every id is looked up within the key's organization:
// anything else is 404.

import { appForMcpKey } from '../admin/access.js';
import { organization } from '../admin/organizations.js';
import { mcpAuthView } from '../admin/views.js';
import { appUsage, appVersionHistory, resourceIndex } from '../analytics/app-usage.js';
import { searchAppEvents } from '../analytics/event-search.js';
import { appResourceView, eventPageView, resourceIndexView, versionHistoryView } from '../analytics/views.js';
import { appAudiences, organizationAudience } from '../audiences/members.js';
import { audienceDetailView, audienceListView } from '../audiences/views.js';
import type { ServiceContext } from '../context.js';
import { MCP_PROTOCOL_VERSION } from '../mcp/constants.js';
import { mcpDocs, serverInfoView } from '../mcp/docs.js';
import type { AppRow } from '../storage/tenancy.js';
import { userProfile } from '../tracking/user-profiles.js';
import { userProfileView } from '../tracking/views.js';
import { mcpPrincipal, type RequestContext } from './context.js';
import type { Handlers } from './operations.js';

/** The app an MCP request names (resolved and checked before the handler), else the organization's only app. */
export async function mcpApp(ctx: ServiceContext, request: RequestContext, appId?: string): Promise<AppRow> {
  if (appId !== undefined) return appForMcpKey(ctx.db, mcpPrincipal(request), appId);
  return request.app ?? appForMcpKey(ctx.db, mcpPrincipal(request));
}

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
    Mcp_info: () => serverInfoView(ctx.clock()),
    Mcp_docs: (_input, request) => mcpDocs(ctx, ctx.config.publicBaseUrl ?? request.origin),
    Mcp_auth: async (_input, request) => {
      const principal = mcpPrincipal(request);
      return mcpAuthView(await organization(ctx, principal.organizationId), principal, MCP_PROTOCOL_VERSION);
    },
    Mcp_resources: async (_input, request) =>
      resourceIndexView(await resourceIndex(ctx, mcpPrincipal(request).organizationId)),
    Mcp_getApp: async ({ path }, request) => {
      const app = await mcpApp(ctx, request, path.appId);
      return appResourceView(app, await appUsage(ctx, app));
    },
    Mcp_appVersions: async ({ path }, request) => {
      const app = await mcpApp(ctx, request, path.appId);
      return versionHistoryView(app, await appVersionHistory(ctx, app));
    },
    Mcp_events: async ({ query }, request) =>
      eventPageView(
        await searchAppEvents(ctx, await mcpApp(ctx, request), {
          eventName: query.event_name,
          userId: query.user_id,
          startDate: query.start_date,
          endDate: query.end_date,
          limit: query.limit ?? 100,
          offset: query.offset ?? 0,
        }),
      ),
    Mcp_getUser: async ({ path }, request) =>
      userProfileView(await userProfile(ctx, (await mcpApp(ctx, request)).id, path.userId)),
    Mcp_listAudiences: async (_input, request) =>
      audienceListView(await appAudiences(ctx, (await mcpApp(ctx, request)).id)),
    Mcp_getAudience: async ({ path }, request) =>
      audienceDetailView(await organizationAudience(ctx, mcpPrincipal(request).organizationId, path.audienceId)),
  };
}
