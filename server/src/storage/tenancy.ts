// Queries for organizations, apps, API keys, app versions and server settings. Organizations,
// keys found by hash or id, and server settings are not per-app by nature: each says why.
import type { Knex } from 'knex';

export interface OrganizationRow {
  id: string;
  name: string;
  description: string | null;
  timezone: string;
  created_at: Date;
  updated_at: Date;
}

export type BotDetectionMode = 'off' | 'basic' | 'advanced';
export type IpMode = 'full' | 'truncate' | 'none';

export interface AppRow {
  id: string;
  organization_id: string;
  name: string;
  description: string;
  website_url: string | null;
  authorized_domains: string[];
  bot_detection: BotDetectionMode;
  advanced_attested: boolean;
  consent_message: string | null;
  conversion_events: string[];
  retention_days: number | null;
  ip_mode: IpMode;
  /** Campaign pushes one user may receive in 24 hours (default 3). */
  push_frequency_cap_per_day: number;
  /** `HH:MM-HH:MM` in the organization's time zone, or null. */
  push_quiet_hours: string | null;
  /** Whether MCP keys may create push campaigns (`create_push_campaign`). */
  mcp_campaigns: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface ApiKeyRow {
  id: string;
  organization_id: string;
  app_id: string;
  kind: 'rest' | 'mcp';
  name: string;
  key_prefix: string;
  key_hash: string;
  permissions: string[];
  org_wide: boolean;
  created_at: Date;
  revoked_at: Date | null;
}

/** Not per-app: an organization holds apps. */
export const insertOrganization = (db: Knex, row: Partial<OrganizationRow> & Pick<OrganizationRow, 'id' | 'name'>) =>
  db('organizations')
    .insert(row)
    .returning<OrganizationRow[]>('*')
    .then((r) => r[0]!);

/** Not per-app: an organization holds apps. */
export const findOrganization = (db: Knex, id: string) => db<OrganizationRow>('organizations').where({ id }).first();

/** Not per-app: the admin listing of every organization. */
export const listOrganizations = (db: Knex) => db<OrganizationRow>('organizations').orderBy('created_at');

/** Not per-app: an organization holds apps. */
export const updateOrganization = (db: Knex, id: string, patch: Partial<OrganizationRow>) =>
  db('organizations')
    .where({ id })
    .update({ ...patch, updated_at: db.fn.now() })
    .returning<OrganizationRow[]>('*')
    .then((r) => r[0]);

/** jsonb columns are written as JSON text; pg would send a JS array as a PostgreSQL array. */
function jsonColumns<T extends Partial<AppRow>>(row: T) {
  const out: Record<string, unknown> = { ...row };
  for (const k of ['authorized_domains', 'conversion_events'] as const) {
    if (row[k] !== undefined) out[k] = JSON.stringify(row[k]);
  }
  return out;
}

export const insertApp = (db: Knex, row: Partial<AppRow> & Pick<AppRow, 'id' | 'organization_id' | 'name'>) =>
  db('apps')
    .insert(jsonColumns(row))
    .returning<AppRow[]>('*')
    .then((r) => r[0]!);

export const findApp = (db: Knex, id: string) => db<AppRow>('apps').where({ id }).first();

/** Not per-app: the apps of an organization, or every app (admin listing). */
export const listApps = (db: Knex, organizationId?: string) => {
  const q = db<AppRow>('apps').orderBy('created_at');
  return organizationId ? q.where({ organization_id: organizationId }) : q;
};

export const updateApp = (db: Knex, id: string, patch: Partial<AppRow>) =>
  db('apps')
    .where({ id })
    .update({ ...jsonColumns(patch), updated_at: db.fn.now() })
    .returning<AppRow[]>('*')
    .then((r) => r[0]);

export const insertApiKey = (db: Knex, row: Omit<ApiKeyRow, 'created_at' | 'revoked_at'>) =>
  db('api_keys')
    .insert({ ...row, permissions: JSON.stringify(row.permissions) })
    .returning<ApiKeyRow[]>('*')
    .then((r) => r[0]!);

/** Not per-app: authentication knows only the key itself, not yet its app. */
export const findApiKeyByHash = (db: Knex, keyHash: string) =>
  db<ApiKeyRow>('api_keys').where({ key_hash: keyHash }).first();

/** Not per-app: the admin API names a key by its id alone (DELETE /admin/v1/keys/{key_id}). */
export const findApiKey = (db: Knex, id: string) => db<ApiKeyRow>('api_keys').where({ id }).first();

export const listApiKeys = (db: Knex, appId: string) =>
  db<ApiKeyRow>('api_keys').where({ app_id: appId }).orderBy('created_at');

/** Not per-app: the admin API names a key by its id alone (DELETE /admin/v1/keys/{key_id}). */
export const revokeApiKey = (db: Knex, id: string) =>
  db('api_keys')
    .where({ id })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())') })
    .returning<ApiKeyRow[]>('*')
    .then((r) => r[0]);

/** Not per-app: settings of the whole server. */
export async function getSetting<T>(db: Knex, key: string): Promise<T | undefined> {
  const row = await db('server_settings').where({ key }).first();
  return row?.value as T | undefined;
}

/** Not per-app: settings of the whole server. */
export async function putSetting(db: Knex, key: string, value: unknown): Promise<void> {
  await db('server_settings')
    .insert({ key, value: JSON.stringify(value) })
    .onConflict('key')
    .merge();
}

/** Not per-app: every app's id, for maintenance jobs that work app by app. */
export const allAppIds = async (db: Knex): Promise<string[]> =>
  (await db('apps').select('id').orderBy('id')).map((r: { id: string }) => r.id);

/**
 * Not per-app: serializes first-start bootstraps across instances sharing one PostgreSQL, until
 * the transaction ends.
 */
export async function takeBootstrapLock(tx: Knex.Transaction): Promise<void> {
  await tx.raw('select pg_advisory_xact_lock(7461726)');
}

/** Not per-app: whether the server has any organization yet (first start). */
export async function anyOrganizationExists(db: Knex): Promise<boolean> {
  return (await db('organizations').first('id')) !== undefined;
}

export interface VersionRow {
  id: string;
  app_id: string;
  version: string;
  release_notes: string | null;
  released_at: Date;
  created_by: string | null;
}

export async function insertAppVersion(db: Knex, appId: string, row: Omit<VersionRow, 'app_id'>): Promise<VersionRow> {
  const [saved] = await db('app_versions')
    .insert({ ...row, app_id: appId })
    .returning<VersionRow[]>('*');
  return saved!;
}

/** The app's versions, latest release first. */
export const appVersions = (db: Knex, appId: string): Promise<VersionRow[]> =>
  db<VersionRow>('app_versions')
    .where({ app_id: appId })
    .orderBy([
      { column: 'released_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ]);
