// Admin API handlers (/admin/v1): organizations, apps, keys and app versions.
import * as admin from '../admin/admin.js';
import { appVersionView, appView, createdKeyView, keyRevokedView, keyView, organizationView } from '../admin/views.js';
import type { ServiceContext } from '../context.js';
import { actorOf } from './context.js';
import type { Handlers } from './operations.js';

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
    AdminOrganizations_create: async ({ body }, request) => ({
      success: true,
      ...organizationView(await admin.createOrganization(ctx, body, actorOf(request))),
    }),
    AdminOrganizations_list: async () => ({
      success: true,
      items: (await admin.organizations(ctx)).map(organizationView),
    }),
    AdminOrganizations_get: async ({ path }) => ({
      success: true,
      ...organizationView(await admin.getOrganization(ctx, path.organization_id)),
    }),
    AdminOrganizations_update: async ({ body, path }, request) => ({
      success: true,
      ...organizationView(await admin.changeOrganization(ctx, path.organization_id, body, actorOf(request))),
    }),

    AdminApps_create: async ({ body }, request) => ({
      success: true,
      ...appView(await admin.createApp(ctx, body, actorOf(request))),
    }),
    AdminApps_list: async ({ query }) => ({
      success: true,
      items: (await admin.apps(ctx, query.organization_id)).map(appView),
    }),
    AdminApps_get: async ({ path }) => ({ success: true, ...appView(await admin.getApp(ctx, path.app_id)) }),
    AdminApps_update: async ({ body, path }, request) => ({
      success: true,
      ...appView(await admin.changeApp(ctx, path.app_id, body, actorOf(request))),
    }),

    AdminKeys_create: async ({ body, path }, request) => {
      const { row, secret } = await admin.issueKey(ctx, path.app_id, body, actorOf(request));
      return createdKeyView(row, secret);
    },
    AdminKeys_list: async ({ path }) => ({ success: true, items: (await admin.keysOf(ctx, path.app_id)).map(keyView) }),
    AdminKeys_revoke: async ({ path }, request) =>
      keyRevokedView(await admin.revoke(ctx, path.key_id, actorOf(request))),

    AdminVersions_add: async ({ body, path }, request) => ({
      success: true,
      ...appVersionView(await admin.addVersion(ctx, path.app_id, body, actorOf(request))),
    }),
    AdminVersions_list: async ({ path }) => ({
      success: true,
      items: (await admin.versionsOf(ctx, path.app_id)).map(appVersionView),
    }),
  };
}
