// What callers see of tenancy: organizations, apps, keys and app versions as the admin API returns
// them, and the MCP key's identity (GET /mcp/auth). Each body is built here once and typed with
// the contract's own type; the handlers add the `success` flag their envelope carries.
import type {
  AdminTokenInfo,
  AdminTokenIssued,
  App,
  AppVersion,
  CreatedKey,
  KeyInfo,
  KeyPermission,
  KeyRevoked,
  McpAuthInfo,
  Organization,
} from '@tally/client';
import type { AdminTokenRow } from '../storage/admin-tokens.js';
import type { ApiKeyRow, AppRow, OrganizationRow, VersionRow } from '../storage/tenancy.js';
import type { McpPrincipal } from './keys.js';

export const organizationView = (o: OrganizationRow): Organization => ({
  organization_id: o.id,
  name: o.name,
  description: o.description,
  timezone: o.timezone,
  created_at: o.created_at.toISOString(),
  updated_at: o.updated_at.toISOString(),
});

export const appView = (a: AppRow): App => ({
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

export const keyView = (k: ApiKeyRow): KeyInfo => ({
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

/** A new key: its secret, shown this once, then what the key list shows of it. */
export const createdKeyView = (row: ApiKeyRow, secret: string): CreatedKey => ({
  success: true,
  key: secret,
  ...keyView(row),
});

export const keyRevokedView = (row: ApiKeyRow): KeyRevoked => ({ success: true, key_id: row.id, revoked: true });

/** One release of an app: the admin API's version and an entry of the MCP version history. */
export const appVersionView = (v: Omit<VersionRow, 'app_id'>): AppVersion => ({
  id: v.id,
  version: v.version,
  release_notes: v.release_notes,
  released_at: v.released_at.toISOString(),
  created_by: v.created_by,
});

/** GET /mcp/auth: the key's organization and permissions (the protocol version comes from the MCP adapter). */
export const mcpAuthView = (org: OrganizationRow, principal: McpPrincipal, protocolVersion: string): McpAuthInfo => ({
  authenticated: true,
  organization: { id: org.id, name: org.name, description: org.description, timezone: org.timezone },
  permissions: [...principal.permissions],
  protocol_version: protocolVersion,
});

export const adminTokenInfoView = (row: AdminTokenRow): AdminTokenInfo => ({
  token_id: row.id,
  label: row.label,
  created_at: row.created_at.toISOString(),
  expires_at: row.expires_at?.toISOString() ?? null,
});

/** POST /admin/v1/admin-tokens: the new token, shown once. */
export const adminTokenIssuedView = (r: {
  token: string;
  row: AdminTokenRow;
  previousEndAt: Date | null;
  active: AdminTokenRow[];
}): AdminTokenIssued => ({
  success: true,
  token: r.token,
  ...adminTokenInfoView(r.row),
  previous_tokens_end_at: r.previousEndAt?.toISOString() ?? null,
  active: r.active.map(adminTokenInfoView),
});
