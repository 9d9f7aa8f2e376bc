// Erasure, export and the audit trail: DELETE /v1/users/{user_id}, GET /v1/users/{user_id}/export
// (actor: the REST key) and their admin twins under /admin/v1/apps/{app_id}/users (actor `admin`),
// plus the audit trails: GET /admin/v1/apps/{app_id}/audit and GET /admin/v1/audit. Exports are streamed.
import { getApp } from '../admin/admin.js';
import type { ServiceContext } from '../context.js';
import { auditTrail, eraseUser, exportUser, installationAuditTrail } from '../privacy/privacy.js';
import { auditListView, erasedView, installationAuditListView } from '../privacy/views.js';
import { actorOf, requireApp } from './context.js';
import { type Handlers, reply } from './operations.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

export function privacyHandlers(
  ctx: ServiceContext,
): Handlers<
  | 'Users_erase'
  | 'Users_export'
  | 'AdminPrivacy_eraseUser'
  | 'AdminPrivacy_exportUser'
  | 'AdminPrivacy_audit'
  | 'AdminAudit_list'
> {
  return {
    Users_erase: async ({ path }, request) =>
      erasedView(await eraseUser(ctx, requireApp(request).id, path.user_id, actorOf(request))),
    Users_export: async ({ path }, request) => {
      const started = await exportUser(ctx, requireApp(request).id, path.user_id, actorOf(request));
      return reply.stream('application/json', started.chunks, NO_STORE);
    },
    AdminPrivacy_eraseUser: async ({ path }, request) => {
      const app = await getApp(ctx, path.app_id);
      return erasedView(await eraseUser(ctx, app.id, path.user_id, actorOf(request)));
    },
    AdminPrivacy_exportUser: async ({ path }, request) => {
      const app = await getApp(ctx, path.app_id);
      const started = await exportUser(ctx, app.id, path.user_id, actorOf(request));
      return reply.stream('application/json', started.chunks, NO_STORE);
    },
    AdminPrivacy_audit: async ({ path, query }) => {
      const app = await getApp(ctx, path.app_id);
      // the validator fills the contract's defaults
      const limit = query.limit ?? 100;
      const offset = query.offset ?? 0;
      return auditListView(await auditTrail(ctx, app.id, { action: query.action, limit, offset }), limit, offset);
    },
    AdminAudit_list: async ({ query }) => {
      const limit = query.limit ?? 100;
      const offset = query.offset ?? 0;
      const page = await installationAuditTrail(ctx, { action: query.action, limit, offset });
      return installationAuditListView(page, limit, offset);
    },
  };
}
