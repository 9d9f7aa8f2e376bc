// Admin API handlers (/admin/v1): organizations, apps, keys and app versions.
import type { KeyPermission } from '@tally/client';
import * as admin from '../admin/admin.js';
import type { ServiceContext } from '../context.js';
import type { ApiKeyRow, AppRow, OrganizationRow } from '../storage/tenancy.js';
import type { Handlers } from './operations.js';

const organizationView = (o: OrganizationRow) => ({
  organization_id: o.id,
  name: o.name,
  description: o.description,
  timezone: o.timezone,
  created_at: o.created_at.toISOString(),
  updated_at: o.updated_at.toISOString(),
});

export const appView = (a: AppRow) => ({
  app_id: a.id,
  organization_id: a.organization_id,
  name: a.name,
  website_url: a.website_url,
  authorized_domains: a.authorized_domains,
  bot_detection: a.bot_detection,
  advanced_attested: a.advanced_attested,
  consent_message: a.consent_message,
  conversion_events: a.conversion_events,
  retention_days: a.retention_days,
  ip_mode: a.ip_mode,
  push_frequency_cap_per_day: a.push_frequency_cap_per_day,
  push_quiet_hours: a.push_quiet_hours,
  mcp_campaigns: a.mcp_campaigns,
  created_at: a.created_at.toISOString(),
  updated_at: a.updated_at.toISOString(),
});

const keyView = (k: ApiKeyRow) => ({
  key_id: k.id,
  kind: k.kind,
  name: k.name || null,
  app_id: k.app_id,
  organization_id: k.organization_id,
  permissions: k.permissions as KeyPermission[],
  org_wide: k.org_wide,
  created_at: k.created_at.toISOString(),
  revoked_at: k.revoked_at ? k.revoked_at.toISOString() : null,
});

export const versionView = (v: admin.VersionRow) => ({
  id: v.id,
  version: v.version,
  release_notes: v.release_notes,
  released_at: v.released_at.toISOString(),
  created_by: v.created_by,
});

type AdminOperation =
  | 'AdminOrganizations_create'
  | 'AdminOrganizations_list'
  | 'AdminOrganizations_get'
  | 'AdminOrganizations_update'
  | 'AdminApps_create'
  | 'AdminApps_list'
  | 'AdminApps_get'
  | 'AdminApps_update'
  | 'AdminKeys_create'
  | 'AdminKeys_list'
  | 'AdminKeys_revoke'
  | 'AdminVersions_add'
  | 'AdminVersions_list';

export function adminHandlers(ctx: ServiceContext): Handlers<AdminOperation> {
  return {
    AdminOrganizations_create: async ({ body }) => ({
      success: true,
      ...organizationView(await admin.createOrganization(ctx, body)),
    }),
    AdminOrganizations_list: async () => ({
      success: true,
      items: (await admin.organizations(ctx)).map(organizationView),
    }),
    AdminOrganizations_get: async ({ path }) => ({
      success: true,
      ...organizationView(await admin.getOrganization(ctx, path.organization_id)),
    }),
    AdminOrganizations_update: async ({ body, path }) => ({
      success: true,
      ...organizationView(await admin.changeOrganization(ctx, path.organization_id, body)),
    }),

    AdminApps_create: async ({ body }) => ({ success: true, ...appView(await admin.createApp(ctx, body)) }),
    AdminApps_list: async ({ query }) => ({
      success: true,
      items: (await admin.apps(ctx, query.organization_id)).map(appView),
    }),
    AdminApps_get: async ({ path }) => ({ success: true, ...appView(await admin.getApp(ctx, path.app_id)) }),
    AdminApps_update: async ({ body, path }) => ({
      success: true,
      ...appView(await admin.changeApp(ctx, path.app_id, body)),
    }),

    AdminKeys_create: async ({ body, path }) => {
      const { row, secret } = await admin.issueKey(ctx, path.app_id, body);
      return { success: true, key: secret, ...keyView(row) };
    },
    AdminKeys_list: async ({ path }) => ({ success: true, items: (await admin.keysOf(ctx, path.app_id)).map(keyView) }),
    AdminKeys_revoke: async ({ path }) => {
      const row = await admin.revoke(ctx, path.key_id);
      return { success: true, key_id: row.id, revoked: true };
    },

    AdminVersions_add: async ({ body, path }) => ({
      success: true,
      ...versionView(await admin.addVersion(ctx, path.app_id, body)),
    }),
    AdminVersions_list: async ({ path }) => ({
      success: true,
      items: (await admin.versionsOf(ctx, path.app_id)).map(versionView),
    }),
  };
}
