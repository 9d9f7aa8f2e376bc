// MCP resource-style GET endpoints (X-MCP-API-Key, `read` permission checked by the security
// handler): server information and documentation, the key's identity, the organization's apps,
// versions, events, users and audiences. Every id is looked up within the key's organization:
// anything else is 404.

import { MCP_PROTOCOL_VERSION, MCP_SERVER_NAME, MCP_SERVER_VERSION } from '../mcp/constants.js';
import { mcpDocs } from '../mcp/docs.js';
import { appForMcpKey } from '../services/access.js';
import { appUsage, appVersionHistory, resourceIndex } from '../services/app-resources.js';
import type { ServiceContext } from '../services/context.js';
import { searchAppEvents } from '../services/event-search.js';
import { appAudiences, organizationAudience } from '../services/mcp-audiences.js';
import { organization } from '../services/organizations.js';
import { userProfile } from '../services/user-profiles.js';
import type { AudienceRow } from '../storage/audiences.js';
import type { AppRow } from '../storage/tenancy.js';
import { mcpPrincipal, type RequestContext } from './context.js';
import type { Handlers } from './operations.js';

/** The app an MCP request names (resolved and checked before the handler), else the organization's only app. */
export async function mcpApp(ctx: ServiceContext, request: RequestContext, appId?: string): Promise<AppRow> {
  if (appId !== undefined) return appForMcpKey(ctx.db, mcpPrincipal(request), appId);
  return request.app ?? appForMcpKey(ctx.db, mcpPrincipal(request));
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

const audienceRef = (a: AudienceRow) => ({
  id: a.id,
  name: a.name,
  description: a.description,
  type: 'audience' as const,
  app_id: a.app_id,
  uri: `/mcp/resources/audiences/${a.id}`,
});

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
    Mcp_resources: async (_input, request) => {
      const { apps, audiences } = await resourceIndex(ctx, mcpPrincipal(request).organizationId);
      return {
        resources: {
          apps: apps.map((a) => ({
            id: a.id,
            name: a.name,
            description: a.description,
            type: 'app' as const,
            uri: `/mcp/resources/apps/${a.id}`,
          })),
          audiences: audiences.map(audienceRef),
        },
      };
    },
    Mcp_getApp: async ({ path }, request) => {
      const app = await mcpApp(ctx, request, path.appId);
      const { totals, topEvents } = await appUsage(ctx, app);
      return {
        id: app.id,
        name: app.name,
        description: app.description,
        created_at: app.created_at.toISOString(),
        updated_at: app.updated_at.toISOString(),
        stats: { users: totals.users, events: totals.events, last_activity: iso(totals.lastActivity) },
        top_events: topEvents,
      };
    },
    Mcp_appVersions: async ({ path }, request) => {
      const app = await mcpApp(ctx, request, path.appId);
      const { versions, current } = await appVersionHistory(ctx, app);
      return {
        app_id: app.id,
        app_name: app.name,
        current_version: current,
        versions: versions.map((v) => ({
          id: v.id,
          version: v.version,
          release_notes: v.release_notes,
          released_at: v.released_at.toISOString(),
          created_by: v.created_by,
        })),
        total: versions.length,
      };
    },
    Mcp_events: async ({ query }, request) => {
      const app = await mcpApp(ctx, request);
      const page = await searchAppEvents(ctx, app, {
        eventName: query.event_name,
        userId: query.user_id,
        startDate: query.start_date,
        endDate: query.end_date,
        limit: query.limit ?? 100,
        offset: query.offset ?? 0,
      });
      return {
        events: page.events.map((e) => ({
          id: e.id,
          app_id: e.app_id,
          user_id: e.user_id,
          event_name: e.event_name,
          properties: e.properties,
          created_at: e.created_at.toISOString(),
        })),
        pagination: { total: page.total, limit: page.limit, offset: page.offset, has_more: page.hasMore },
      };
    },
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
    Mcp_getAudience: async ({ path }, request) => {
      const {
        audience: a,
        users,
        total,
      } = await organizationAudience(ctx, mcpPrincipal(request).organizationId, path.audienceId);
      return {
        id: a.id,
        name: a.name,
        description: a.description,
        criteria: a.criteria,
        app_id: a.app_id,
        user_count: total,
        created_at: a.created_at.toISOString(),
        updated_at: a.updated_at.toISOString(),
        users: users.map((u) => ({ user_id: u.user_id, email: u.email, last_active: u.last_active })),
        users_total: total,
      };
    },
  };
}
