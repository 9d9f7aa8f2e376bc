// Erasure, export and the audit trail: DELETE /v1/users/{user_id}, GET /v1/users/{user_id}/export
// (actor: the REST key) and their admin twins under /admin/v1/apps/{app_id}/users (actor `admin`),
// plus GET /admin/v1/apps/{app_id}/audit. Exports are streamed.
import { getApp } from '../admin/admin.js';
import type { ServiceContext } from '../context.js';
import { auditTrail, eraseUser, exportUser } from '../privacy/privacy.js';
import type { AuditRow } from '../storage/audit.js';
import { requireApp, restPrincipal } from './context.js';
import { type Handlers, reply } from './operations.js';

const auditView = (row: AuditRow) => ({
  id: row.id,
  action: row.action,
  actor: row.actor,
  // Entries from before the kind was recorded are erasures and exports: the admin or a REST key.
  actor_kind: row.actor_kind ?? (row.actor === 'admin' ? 'admin' : 'rest'),
  actor_name: row.actor_name,
  user_id: row.user_ref,
  campaign_id: row.campaign_id,
  counts: row.counts,
  completed: row.completed,
  created_at: row.created_at.toISOString(),
});

const NO_STORE = { 'Cache-Control': 'no-store' };

export function privacyHandlers(
  ctx: ServiceContext,
): Handlers<
  'Users_erase' | 'Users_export' | 'AdminPrivacy_eraseUser' | 'AdminPrivacy_exportUser' | 'AdminPrivacy_audit'
> {
  return {
    Users_erase: async ({ path }, request) => ({
      success: true,
      erased: await eraseUser(ctx, requireApp(request).id, path.user_id, restPrincipal(request).keyId),
    }),
    Users_export: async ({ path }, request) => {
      const started = await exportUser(ctx, requireApp(request).id, path.user_id, restPrincipal(request).keyId);
      return reply.stream('application/json', started.chunks, NO_STORE);
    },
    AdminPrivacy_eraseUser: async ({ path }) => {
      const app = await getApp(ctx, path.app_id);
      return { success: true, erased: await eraseUser(ctx, app.id, path.user_id, 'admin') };
    },
    AdminPrivacy_exportUser: async ({ path }) => {
      const app = await getApp(ctx, path.app_id);
      const started = await exportUser(ctx, app.id, path.user_id, 'admin');
      return reply.stream('application/json', started.chunks, NO_STORE);
    },
    AdminPrivacy_audit: async ({ path, query }) => {
      const app = await getApp(ctx, path.app_id);
      // the validator fills the contract's defaults
      const limit = query.limit ?? 100;
      const offset = query.offset ?? 0;
      const { rows, total } = await auditTrail(ctx, app.id, limit, offset);
      return {
        success: true,
        items: rows.map(auditView),
        total,
        limit,
        offset,
        has_more: offset + rows.length < total,
      };
    },
  };
}
