// API keys: creation (only a hash is stored), authentication of each surface's credential, and
// the admin token. A key of one surface never authenticates another. Lookups go through the key
// cache the composition root builds (one per root, on ServiceContext.keys).

import type { Config } from '../config.js';
import { AuthError, NotFoundError } from '../errors.js';
import { hashSecret, isUuid, newSecret, uuidv7 } from '../ids.js';
import { findValidAdminToken, insertAdminToken } from '../storage/admin-tokens.js';
import type { Db } from '../storage/handle.js';
import {
  type ApiKeyRow,
  type AppRow,
  findApiKey,
  findApiKeyByHash,
  insertApiKey,
  listApiKeys,
  revokeApiKey,
} from '../storage/tenancy.js';

export type Permission = 'read' | 'write';

export interface RestPrincipal {
  readonly kind: 'rest';
  readonly keyId: string;
  readonly appId: string;
  readonly organizationId: string;
  readonly orgWide: boolean;
  /** The key's label (may be empty), recorded in the audit trail. */
  readonly keyName: string;
}

export interface McpPrincipal {
  readonly kind: 'mcp';
  readonly keyId: string;
  readonly organizationId: string;
  readonly permissions: readonly Permission[];
  /** The key's label (may be empty), recorded on what the key creates. */
  readonly keyName: string;
}

export interface CreatedKey {
  row: ApiKeyRow;
  /** The whole key. Shown once; only its hash is kept. */
  secret: string;
}

export async function createKey(
  db: Db,
  app: Pick<AppRow, 'id' | 'organization_id'>,
  options: { kind: 'rest' | 'mcp'; permissions?: Permission[]; orgWide?: boolean; name?: string },
): Promise<CreatedKey> {
  const secret = newSecret(options.kind);
  const permissions = options.kind === 'mcp' ? [...new Set(options.permissions ?? ['read', 'write'])] : [];
  const row = await insertApiKey(db, {
    id: uuidv7(),
    organization_id: app.organization_id,
    app_id: app.id,
    kind: options.kind,
    name: options.name ?? '',
    key_prefix: secret.slice(0, secret.indexOf('_', 3) + 5),
    key_hash: hashSecret(secret),
    permissions,
    org_wide: options.kind === 'rest' ? (options.orgWide ?? false) : true,
  });
  return { row, secret };
}

export const listKeys = listApiKeys;

export async function revokeKey(ctx: KeyContext, keyId: string): Promise<ApiKeyRow> {
  const row = isUuid(keyId) ? await revokeApiKey(ctx.db, keyId) : undefined;
  if (!row) throw new NotFoundError(`No API key with id ${keyId}.`);
  ctx.keys.forget(row.key_hash);
  return row;
}

export async function getKey(db: Db, keyId: string): Promise<ApiKeyRow | undefined> {
  return isUuid(keyId) ? findApiKey(db, keyId) : undefined;
}

// Keys are looked up on every request; a short-lived cache keeps that off the hot path. Revocation
// in this process clears the entry at once; other instances see it within the TTL.
const KEY_CACHE_TTL_MS = 5_000;

/** Key rows by hash, each kept a few seconds (a row of null: no such key). */
export class KeyCache {
  private readonly entries = new Map<string, { row: ApiKeyRow | null; expires: number }>();

  /** How many hashes are cached. */
  get size(): number {
    return this.entries.size;
  }

  /** The key with this hash, from the cache while fresh, else from the database. */
  async lookup(db: Db, keyHash: string): Promise<ApiKeyRow | null> {
    const now = Date.now();
    const hit = this.entries.get(keyHash);
    if (hit && hit.expires > now) return hit.row;
    const row = (await findApiKeyByHash(db, keyHash)) ?? null;
    if (this.entries.size > 10_000) this.entries.clear();
    this.entries.set(keyHash, { row, expires: now + KEY_CACHE_TTL_MS });
    return row;
  }

  forget(keyHash: string): void {
    this.entries.delete(keyHash);
  }
}

/** What key checks need: the database and the root's key cache (a ServiceContext has both). */
export interface KeyContext {
  readonly db: Db;
  readonly keys: KeyCache;
}

async function authenticate(ctx: KeyContext, secret: string | undefined, kind: 'rest' | 'mcp'): Promise<ApiKeyRow> {
  const label = kind === 'rest' ? 'API key' : 'MCP API key';
  if (!secret) throw new AuthError('MISSING_AUTH', `This endpoint needs an ${label}; none was sent.`);
  const row = await ctx.keys.lookup(ctx.db, hashSecret(secret));
  if (!row || row.kind !== kind) {
    throw new AuthError('INVALID_API_KEY', `The ${label} is not valid.`);
  }
  if (row.revoked_at) throw new AuthError('REVOKED_API_KEY', `This ${label} has been revoked.`);
  return row;
}

export async function authenticateRest(ctx: KeyContext, secret: string | undefined): Promise<RestPrincipal> {
  const row = await authenticate(ctx, secret, 'rest');
  return {
    kind: 'rest',
    keyId: row.id,
    appId: row.app_id,
    organizationId: row.organization_id,
    orgWide: row.org_wide,
    keyName: row.name,
  };
}

export async function authenticateMcp(ctx: KeyContext, secret: string | undefined): Promise<McpPrincipal> {
  const row = await authenticate(ctx, secret, 'mcp');
  return {
    kind: 'mcp',
    keyId: row.id,
    organizationId: row.organization_id,
    permissions: row.permissions as Permission[],
    keyName: row.name,
  };
}

/** The admin token a request used: a stored token's id and label, or the environment's. */
export interface AdminIdentity {
  readonly id: string;
  readonly label: string;
}

/** Stores a new admin token's hash and returns the token with its row (first start without ADMIN_TOKEN, rotations). */
export async function issueAdminToken(db: Db, now: Date, label = 'first start') {
  const token = newSecret('admin');
  const row = await insertAdminToken(db, {
    id: uuidv7(now.getTime()),
    token_hash: hashSecret(token),
    label,
    created_at: now,
    expires_at: null,
  });
  return { token, row };
}

/**
 * Checks the admin token. With ADMIN_TOKEN set, it and ADMIN_TOKEN_PREVIOUS (during a rotation)
 * are the only tokens; otherwise the stored tokens still valid at `now` are.
 */
export async function authenticateAdmin(
  db: Db,
  config: Pick<Config, 'adminToken' | 'adminTokenPrevious'>,
  token: string | undefined,
  now: Date,
): Promise<AdminIdentity> {
  if (!token) throw new AuthError('MISSING_AUTH', 'The admin API needs the admin token; none was sent.');
  const hash = hashSecret(token);
  if (config.adminToken) {
    if (hash === hashSecret(config.adminToken)) return { id: 'env', label: 'ADMIN_TOKEN' };
    if (config.adminTokenPrevious && hash === hashSecret(config.adminTokenPrevious)) {
      return { id: 'env-previous', label: 'ADMIN_TOKEN_PREVIOUS' };
    }
  } else {
    const row = await findValidAdminToken(db, hash, now);
    if (row) return { id: row.id, label: row.label };
  }
  throw new AuthError('INVALID_API_KEY', 'The admin token is not valid.');
}
