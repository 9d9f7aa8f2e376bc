// Queries for the audit trail. Each app has its own trail (erasures, exports, keys, settings, push
// provider, identity secrets, campaigns); actions on the whole installation (organizations, the
// admin token, SECRET_KEY) have one trail beside them. An entry names who acted, when, on what,
// and non-secret details (which fields changed, never a secret's value or the data itself).
import type { Knex } from 'knex';
import { uuidv7 } from '../ids.js';

export type AuditAction =
  | 'user.erase'
  | 'user.export'
  | 'app.create'
  | 'app.update'
  | 'key.create'
  | 'key.revoke'
  | 'push_provider.configure'
  | 'identity_secret.generate'
  | 'identity_secret.remove'
  | 'campaign.create'
  | 'campaign.pause'
  | 'campaign.resume'
  | 'version.add'
  | 'demo.seed';

export type InstallationAuditAction =
  | 'organization.create'
  | 'organization.update'
  | 'admin_token.rotate'
  | 'admin_token.retire'
  | 'secret_key.reseal';

export type ActorKind = 'admin' | 'rest' | 'mcp';

/** Who performed an action: a credential's kind, its id and its label. */
export interface Actor {
  readonly kind: ActorKind;
  /** The key's id, or for the admin: the admin token's id, `env` (ADMIN_TOKEN) or `env-previous`. */
  readonly id: string;
  readonly label: string | null;
}

/** Non-secret facts about an action; values are plain JSON. */
export type AuditDetails = Record<string, unknown>;

export interface AuditRow {
  id: string;
  app_id: string;
  action: AuditAction;
  /** The key's id, or the admin token's id (`admin` on entries written before tokens had ids). */
  actor: string;
  /** Null on entries written before the kind was recorded (erasures and exports: `admin` or a REST key). */
  actor_kind: ActorKind | null;
  /** The credential's label. */
  actor_name: string | null;
  /** The user identifier the request named; null for actions that are not about one user. */
  user_ref: string | null;
  campaign_id: string | null;
  counts: Record<string, number>;
  completed: boolean;
  details: AuditDetails;
  created_at: Date;
}

export interface InstallationAuditRow {
  id: string;
  action: InstallationAuditAction;
  actor: string;
  actor_kind: ActorKind;
  actor_name: string | null;
  organization_id: string | null;
  details: AuditDetails;
  created_at: Date;
}

export type NewAuditEntry = Omit<AuditRow, 'actor_kind' | 'actor_name' | 'campaign_id' | 'details'> &
  Partial<Pick<AuditRow, 'actor_kind' | 'actor_name' | 'campaign_id' | 'details'>>;

export async function insertAuditEntry(db: Knex, row: NewAuditEntry): Promise<void> {
  await db('audit_entries').insert({
    ...row,
    counts: JSON.stringify(row.counts),
    details: JSON.stringify(row.details ?? {}),
  });
}

export interface AuditFilter {
  action?: string;
  limit: number;
  offset: number;
}

/** A page of the app's audit trail, newest first. */
export const listAuditEntries = (db: Knex, appId: string, filter: AuditFilter) =>
  db<AuditRow>('audit_entries')
    .where({ app_id: appId })
    .modify((q) => {
      if (filter.action !== undefined) q.where('action', filter.action);
    })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(filter.limit)
    .offset(filter.offset);

export async function countAuditEntries(db: Knex, appId: string, action?: string): Promise<number> {
  const row = await db('audit_entries')
    .where({ app_id: appId })
    .modify((q) => {
      if (action !== undefined) q.where('action', action);
    })
    .count<{ n: string }[]>('* as n')
    .first();
  return Number(row?.n ?? 0);
}

/** Not per-app: an action on the whole installation or an organization. */
export async function insertInstallationAuditEntry(db: Knex, row: InstallationAuditRow): Promise<void> {
  await db('installation_audit_entries').insert({ ...row, details: JSON.stringify(row.details) });
}

/** Not per-app: a page of the installation's trail, newest first. */
export const listInstallationAuditEntries = (db: Knex, filter: AuditFilter) =>
  db<InstallationAuditRow>('installation_audit_entries')
    .modify((q) => {
      if (filter.action !== undefined) q.where('action', filter.action);
    })
    .orderBy([
      { column: 'created_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(filter.limit)
    .offset(filter.offset);

/** Not per-app: how many entries the installation's trail holds. */
export async function countInstallationAuditEntries(db: Knex, action?: string): Promise<number> {
  const row = await db('installation_audit_entries')
    .modify((q) => {
      if (action !== undefined) q.where('action', action);
    })
    .count<{ n: string }[]>('* as n')
    .first();
  return Number(row?.n ?? 0);
}

/** What to record about an action on an app (the time is the caller's clock). */
export interface AppAction {
  appId: string;
  action: AuditAction;
  actor: Actor;
  at: Date;
  details?: AuditDetails;
  campaignId?: string | null;
  userRef?: string | null;
  counts?: Record<string, number>;
  completed?: boolean;
}

/** Records an action in the app's trail; pass the transaction that made the change. */
export async function recordAppAction(db: Knex, a: AppAction): Promise<void> {
  await insertAuditEntry(db, {
    id: uuidv7(a.at.getTime()),
    app_id: a.appId,
    action: a.action,
    actor: a.actor.id,
    actor_kind: a.actor.kind,
    actor_name: a.actor.label,
    user_ref: a.userRef ?? null,
    campaign_id: a.campaignId ?? null,
    counts: a.counts ?? {},
    completed: a.completed ?? true,
    details: a.details ?? {},
    created_at: a.at,
  });
}

/** Not per-app: records an action in the installation's trail. */
export async function recordInstallationAction(
  db: Knex,
  a: {
    action: InstallationAuditAction;
    actor: Actor;
    at: Date;
    organizationId?: string | null;
    details?: AuditDetails;
  },
): Promise<void> {
  await insertInstallationAuditEntry(db, {
    id: uuidv7(a.at.getTime()),
    action: a.action,
    actor: a.actor.id,
    actor_kind: a.actor.kind,
    actor_name: a.actor.label,
    organization_id: a.organizationId ?? null,
    details: a.details ?? {},
    created_at: a.at,
  });
}
