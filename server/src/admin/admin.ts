// Operator actions behind the admin API and the `tally` CLI: organizations, apps, keys, versions,
// each recorded in the audit trail with the admin token that asked.

import type { ServiceContext } from '../context.js';
import { type FieldError, NotFoundError, refuseIfAny } from '../errors.js';
import { isUuid, uuidv7 } from '../ids.js';
import { type Actor, recordAppAction, recordInstallationAction } from '../storage/audit.js';
import { inTransaction } from '../storage/handle.js';
import {
  type AppRow,
  appVersions,
  findApp,
  findOrganization,
  insertApp,
  insertAppVersion,
  insertOrganization,
  listApps,
  listOrganizations,
  type OrganizationRow,
  updateApp,
  updateOrganization,
  type VersionRow,
} from '../storage/tenancy.js';
import { validQuietHours } from '../time.js';
import { createKey, getKey, listKeys, type Permission, revokeKey } from './keys.js';

function checkTimezone(timezone: string | undefined, errors: FieldError[]): void {
  if (timezone === undefined) return;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: timezone });
  } catch {
    errors.push({
      path: '/body/timezone',
      message: `"${timezone}" is not an IANA time zone name such as Europe/Paris`,
    });
  }
}

export async function getOrganization(ctx: ServiceContext, id: string): Promise<OrganizationRow> {
  const org = isUuid(id) ? await findOrganization(ctx.db, id) : undefined;
  if (!org) throw new NotFoundError(`No organization with id ${id}.`);
  return org;
}

export async function createOrganization(
  ctx: ServiceContext,
  input: { name: string; description?: string; timezone?: string },
  actor: Actor,
) {
  const errors: FieldError[] = [];
  checkTimezone(input.timezone, errors);
  refuseIfAny(errors, 'settings');
  return inTransaction(ctx.db, async (tx) => {
    const org = await insertOrganization(tx, { id: uuidv7(), ...input });
    await recordInstallationAction(tx, {
      action: 'organization.create',
      actor,
      at: ctx.clock(),
      organizationId: org.id,
      details: { name: org.name, timezone: org.timezone },
    });
    return org;
  });
}

export const organizations = (ctx: ServiceContext) => listOrganizations(ctx.db);

export async function changeOrganization(
  ctx: ServiceContext,
  id: string,
  patch: { name?: string; description?: string | null; timezone?: string },
  actor: Actor,
) {
  const errors: FieldError[] = [];
  checkTimezone(patch.timezone, errors);
  refuseIfAny(errors, 'settings');
  const before = await getOrganization(ctx, id);
  return inTransaction(ctx.db, async (tx) => {
    const after = (await updateOrganization(tx, id, patch))!;
    await recordInstallationAction(tx, {
      action: 'organization.update',
      actor,
      at: ctx.clock(),
      organizationId: id,
      details: { changes: changesOf(before, after, Object.keys(patch)) },
    });
    return after;
  });
}

/** Each named field whose value differs, with its old and new value (settings only: none is secret). */
function changesOf<T extends object>(
  before: T,
  after: T,
  fields: string[],
): Record<string, { from: unknown; to: unknown }> {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const field of fields) {
    const from = (before as Record<string, unknown>)[field] ?? null;
    const to = (after as Record<string, unknown>)[field] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[field] = { from, to };
  }
  return changes;
}

export async function getApp(ctx: ServiceContext, id: string): Promise<AppRow> {
  const app = isUuid(id) ? await findApp(ctx.db, id) : undefined;
  if (!app) throw new NotFoundError(`No app with id ${id}.`);
  return app;
}

export type AppSettings = Partial<
  Pick<
    AppRow,
    | 'name'
    | 'website_url'
    | 'authorized_domains'
    | 'bot_detection'
    | 'advanced_attested'
    | 'consent_message'
    | 'conversion_events'
    | 'retention_days'
    | 'ip_mode'
    | 'push_frequency_cap_per_day'
    | 'push_quiet_hours'
    | 'mcp_campaigns'
  >
>;

function checkSettings(settings: AppSettings, current: AppRow | undefined, errors: FieldError[]): void {
  const mode = settings.bot_detection ?? current?.bot_detection;
  const attested = settings.advanced_attested ?? current?.advanced_attested ?? false;
  if (mode === 'advanced' && !attested) {
    errors.push({
      path: '/body/bot_detection',
      message: 'advanced mode needs advanced_attested: true (visitors must be shown a consent message)',
    });
  }
  if (settings.push_quiet_hours && !validQuietHours(settings.push_quiet_hours)) {
    errors.push({ path: '/body/push_quiet_hours', message: 'must be HH:MM-HH:MM with different start and end times' });
  }
  if (settings.retention_days !== undefined && settings.retention_days !== null && settings.retention_days < 1) {
    errors.push({ path: '/body/retention_days', message: 'must be at least 1 day, or null to keep data forever' });
  }
}

export async function createApp(
  ctx: ServiceContext,
  input: AppSettings & { organization_id: string; name: string },
  actor: Actor,
) {
  const errors: FieldError[] = [];
  checkSettings(input, undefined, errors);
  refuseIfAny(errors, 'settings');
  await getOrganization(ctx, input.organization_id);
  return inTransaction(ctx.db, async (tx) => {
    const app = await insertApp(tx, { id: uuidv7(), ...input });
    const { organization_id, name, ...settings } = input;
    await recordAppAction(tx, {
      appId: app.id,
      action: 'app.create',
      actor,
      at: ctx.clock(),
      details: { organization_id, name, settings },
    });
    return app;
  });
}

export async function apps(ctx: ServiceContext, organizationId?: string) {
  if (organizationId !== undefined) await getOrganization(ctx, organizationId);
  return listApps(ctx.db, organizationId);
}

export async function changeApp(ctx: ServiceContext, id: string, patch: AppSettings, actor: Actor) {
  const current = await getApp(ctx, id);
  const errors: FieldError[] = [];
  checkSettings(patch, current, errors);
  refuseIfAny(errors, 'settings');
  const changed = await inTransaction(ctx.db, async (tx) => {
    const after = (await updateApp(tx, id, patch))!;
    await recordAppAction(tx, {
      appId: id,
      action: 'app.update',
      actor,
      at: ctx.clock(),
      details: { changes: changesOf(current, after, Object.keys(patch)) },
    });
    return after;
  });
  ctx.apps.forget(id);
  return changed;
}

export async function issueKey(
  ctx: ServiceContext,
  appId: string,
  input: { kind: 'rest' | 'mcp'; permissions?: Permission[]; org_wide?: boolean; name?: string },
  actor: Actor,
) {
  const app = await getApp(ctx, appId);
  return inTransaction(ctx.db, async (tx) => {
    const created = await createKey(tx, app, {
      kind: input.kind,
      permissions: input.permissions,
      orgWide: input.org_wide,
      name: input.name,
    });
    const { row } = created;
    await recordAppAction(tx, {
      appId: app.id,
      action: 'key.create',
      actor,
      at: ctx.clock(),
      details: { key_id: row.id, kind: row.kind, name: row.name, permissions: row.permissions, org_wide: row.org_wide },
    });
    return created;
  });
}

export async function keysOf(ctx: ServiceContext, appId: string) {
  await getApp(ctx, appId);
  return listKeys(ctx.db, appId);
}

/** Revokes a key (again: harmless); recorded in the trail of the key's app. */
export async function revoke(ctx: ServiceContext, keyId: string, actor: Actor) {
  const key = await getKey(ctx.db, keyId);
  if (!key) throw new NotFoundError(`No key with id ${keyId}.`);
  const row = await revokeKey(ctx, keyId);
  await recordAppAction(ctx.db, {
    appId: row.app_id,
    action: 'key.revoke',
    actor,
    at: ctx.clock(),
    details: { key_id: row.id, kind: row.kind, name: row.name, already_revoked: key.revoked_at !== null },
  });
  return row;
}

export type { VersionRow };

export async function addVersion(
  ctx: ServiceContext,
  appId: string,
  input: { version: string; release_notes?: string; released_at?: string; created_by?: string },
  actor: Actor,
): Promise<VersionRow> {
  await getApp(ctx, appId);
  return inTransaction(ctx.db, async (tx) => {
    const row = await insertAppVersion(tx, appId, {
      id: uuidv7(),
      version: input.version,
      release_notes: input.release_notes ?? null,
      released_at: input.released_at ? new Date(input.released_at) : ctx.clock(),
      created_by: input.created_by ?? null,
    });
    await recordAppAction(tx, {
      appId,
      action: 'version.add',
      actor,
      at: ctx.clock(),
      details: { version_id: row.id, version: row.version },
    });
    return row;
  });
}

export async function versionsOf(ctx: ServiceContext, appId: string): Promise<VersionRow[]> {
  await getApp(ctx, appId);
  return appVersions(ctx.db, appId);
}
