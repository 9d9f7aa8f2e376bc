// Admin API handlers (/admin/v1): organizations, apps, keys and app versions.
import type { Request, Response } from 'express';
import * as admin from '../services/admin.js';
import type { ServiceContext } from '../services/context.js';
import type { ApiKeyRow, AppRow, OrganizationRow } from '../storage/tenancy.js';

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
  created_at: a.created_at.toISOString(),
  updated_at: a.updated_at.toISOString(),
});

const keyView = (k: ApiKeyRow) => ({
  key_id: k.id,
  kind: k.kind,
  name: k.name || null,
  app_id: k.app_id,
  organization_id: k.organization_id,
  permissions: k.permissions,
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

// Path parameters as the validator matched them: Express 5 resets req.params for every
// path-less middleware layer, so by the time dispatch runs req.params is empty.
const param = (req: Request, name: string) =>
  String((req as Request & { openapi?: { pathParams?: Record<string, string> } }).openapi?.pathParams?.[name]);
const ok = (res: Response, body: object) => res.json({ success: true, ...body });

export function adminHandlers(ctx: ServiceContext) {
  return {
    AdminOrganizations_create: async (req: Request, res: Response) =>
      ok(res, organizationView(await admin.createOrganization(ctx, req.body))),
    AdminOrganizations_list: async (_req: Request, res: Response) =>
      ok(res, { items: (await admin.organizations(ctx)).map(organizationView) }),
    AdminOrganizations_get: async (req: Request, res: Response) =>
      ok(res, organizationView(await admin.getOrganization(ctx, param(req, 'organization_id')))),
    AdminOrganizations_update: async (req: Request, res: Response) =>
      ok(res, organizationView(await admin.changeOrganization(ctx, param(req, 'organization_id'), req.body))),

    AdminApps_create: async (req: Request, res: Response) => ok(res, appView(await admin.createApp(ctx, req.body))),
    AdminApps_list: async (req: Request, res: Response) => {
      const organizationId = req.query.organization_id as string | undefined;
      ok(res, { items: (await admin.apps(ctx, organizationId)).map(appView) });
    },
    AdminApps_get: async (req: Request, res: Response) =>
      ok(res, appView(await admin.getApp(ctx, param(req, 'app_id')))),
    AdminApps_update: async (req: Request, res: Response) =>
      ok(res, appView(await admin.changeApp(ctx, param(req, 'app_id'), req.body))),

    AdminKeys_create: async (req: Request, res: Response) => {
      const { row, secret } = await admin.issueKey(ctx, param(req, 'app_id'), req.body);
      ok(res, { key: secret, ...keyView(row) });
    },
    AdminKeys_list: async (req: Request, res: Response) =>
      ok(res, { items: (await admin.keysOf(ctx, param(req, 'app_id'))).map(keyView) }),
    AdminKeys_revoke: async (req: Request, res: Response) => {
      const row = await admin.revoke(ctx, param(req, 'key_id'));
      ok(res, { key_id: row.id, revoked: true });
    },

    AdminVersions_add: async (req: Request, res: Response) =>
      ok(res, versionView(await admin.addVersion(ctx, param(req, 'app_id'), req.body))),
    AdminVersions_list: async (req: Request, res: Response) =>
      ok(res, { items: (await admin.versionsOf(ctx, param(req, 'app_id'))).map(versionView) }),
  };
}
