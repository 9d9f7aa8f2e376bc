// The bodies of the MCP resource GETs that the JSON-RPC resources (resources/read) serve too: the
// organization's resource index, an app with its usage, an audience with its first members.

import { organizationAudience } from '../audiences/members.js';
import type { AudienceRow } from '../audiences/queries/audiences.js';
import type { ServiceContext } from '../context.js';
import type { AppRow } from '../storage/tenancy.js';
import { appUsage, resourceIndex } from './app-usage.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const audienceRef = (a: AudienceRow) => ({
  id: a.id,
  name: a.name,
  description: a.description,
  type: 'audience' as const,
  app_id: a.app_id,
  uri: `/mcp/resources/audiences/${a.id}`,
});

export async function resourceIndexView(ctx: ServiceContext, organizationId: string) {
  const { apps, audiences } = await resourceIndex(ctx, organizationId);
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
}

export async function appView(ctx: ServiceContext, app: AppRow) {
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
}

export async function audienceView(ctx: ServiceContext, organizationId: string, audienceId: string) {
  const { audience: a, users, total } = await organizationAudience(ctx, organizationId, audienceId);
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
}
