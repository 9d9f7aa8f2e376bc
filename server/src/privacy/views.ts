// What callers see of data-protection requests, each body built once here and typed with the
// contract: an erasure's counts, a page of the audit trail, and the pieces of a user's export (the
// profile, aliases and each section's records; privacy.ts streams them in order).
import type {
  AuditEntry,
  AuditList,
  InstallationAuditEntry,
  InstallationAuditList,
  UserErased,
  UserExport,
} from '@tally/client';
import type { AuditRow, InstallationAuditRow } from '../storage/audit.js';
import type { AliasRow, UserRow } from '../storage/users.js';

export const erasedView = (erased: UserErased['erased']): UserErased => ({ success: true, erased });

export const auditEntryView = (row: AuditRow): AuditEntry => ({
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
  details: row.details ?? {},
  created_at: row.created_at.toISOString(),
});

/** GET /admin/v1/apps/{app_id}/audit: one page, newest first. */
export const auditListView = (page: { rows: AuditRow[]; total: number }, limit: number, offset: number): AuditList => ({
  success: true,
  items: page.rows.map(auditEntryView),
  total: page.total,
  limit,
  offset,
  has_more: offset + page.rows.length < page.total,
});

export const installationAuditEntryView = (row: InstallationAuditRow): InstallationAuditEntry => ({
  id: row.id,
  action: row.action,
  actor: row.actor,
  actor_kind: row.actor_kind,
  actor_name: row.actor_name,
  organization_id: row.organization_id,
  details: row.details ?? {},
  created_at: row.created_at.toISOString(),
});

/** GET /admin/v1/audit: one page, newest first. */
export const installationAuditListView = (
  page: { rows: InstallationAuditRow[]; total: number },
  limit: number,
  offset: number,
): InstallationAuditList => ({
  success: true,
  items: page.rows.map(installationAuditEntryView),
  total: page.total,
  limit,
  offset,
  has_more: offset + page.rows.length < page.total,
});

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as Date).toISOString());
const text = (v: unknown) => v as string;
const orNull = <T>(v: unknown) => (v ?? null) as T | null;

export const exportedUserView = (user: UserRow): UserExport['user'] => ({
  id: user.id,
  external_id: user.external_id,
  email: user.email,
  phone: user.phone,
  properties: user.properties ?? {},
  origin: user.origin,
  created_at: user.created_at.toISOString(),
  updated_at: user.updated_at.toISOString(),
  last_active: iso(user.last_active),
  event_count: Number(user.event_count),
  created_via: user.created_via,
  api_written_at: iso(user.api_written_at),
});

export const exportedAliasView = (a: Pick<AliasRow, 'alias_id' | 'created_at'>): UserExport['aliases'][number] => ({
  alias_id: a.alias_id,
  created_at: a.created_at.toISOString(),
});

/** The sections of the export that hold records, after the user and their aliases. */
export type ExportSection = 'events' | 'visits' | 'push_subscriptions' | 'deliveries';
type ExportRecord = Record<string, unknown>;
type Sections = { [K in ExportSection]: UserExport[K][number] };

// Every stored column of every record (test/e2e/privacy-export-columns.test.ts compares these
// with the tables' columns), except app_id and user_id, which the export states once.
export const EXPORT_VIEWS: { [K in ExportSection]: (r: ExportRecord, user: UserRow) => Sections[K] } = {
  events: (r, user) => ({
    id: text(r.id),
    app_id: text(r.app_id),
    user_id: user.external_id,
    event_name: text(r.event_name),
    properties: (r.properties ?? {}) as Record<string, unknown>,
    ip: orNull(r.ip),
    ua: orNull(r.ua),
    source: r.source as Sections['events']['source'],
    is_bot: Boolean(r.is_bot),
    created_at: iso(r.created_at)!,
    received_at: iso(r.received_at)!,
  }),
  visits: (r) => ({
    id: text(r.id),
    visitor_id: text(r.visitor_id),
    visit_url: text(r.visit_url),
    path: orNull(r.path),
    referrer: orNull(r.referrer),
    page_title: orNull(r.page_title),
    ua: orNull(r.ua),
    ip: orNull(r.ip),
    signals: (r.signals ?? {}) as Record<string, unknown>,
    advanced_signals: orNull(r.advanced_signals),
    is_bot: r.is_bot as boolean | null,
    bot_reason: orNull(r.bot_reason),
    event_id: orNull(r.event_id),
    created_at: iso(r.created_at)!,
    received_at: iso(r.received_at)!,
  }),
  push_subscriptions: (r) => ({
    id: text(r.id),
    endpoint: text(r.endpoint),
    keys: { p256dh: text(r.p256dh), auth: text(r.auth) },
    expires_at: iso(r.expires_at),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  }),
  deliveries: (r) => ({
    id: text(r.id),
    campaign_id: orNull(r.campaign_id),
    title: text(r.title),
    message: text(r.message),
    action_url: orNull(r.action_url),
    status: r.status as Sections['deliveries']['status'],
    provider: r.provider as Sections['deliveries']['provider'],
    provider_message_id: orNull(r.provider_message_id),
    generated: Boolean(r.generated),
    error: orNull(r.error),
    recipients: Number(r.recipients),
    failure_kind: orNull(r.failure_kind),
    attempts: Number(r.attempts),
    attempted_at: iso(r.attempted_at),
    next_attempt_at: iso(r.next_attempt_at),
    resolved_at: iso(r.resolved_at),
    batch_id: orNull(r.batch_id),
    created_at: iso(r.created_at)!,
    clicked_at: iso(r.clicked_at),
  }),
};
