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
import { CACHE_TTL_MS, type CacheBus } from './cache-bus.js';
import { TtlCache } from './ttl-cache.js';

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
  ctx.keys.forget(row);
  return row;
}

export async function getKey(db: Db, keyId: string): Promise<ApiKeyRow | undefined> {
  return isUuid(keyId) ? findApiKey(db, keyId) : undefined;
}

/**
 * Key rows by hash, read from the database once per CACHE_TTL_MS (a row of null: no such key), by
 * the root's clock. Revocation through a root drops the entry there at once and, with Redis,
 * everywhere (cache-bus.ts); otherwise other instances read the key again within CACHE_TTL_MS.
 */
export class KeyCache {
  private readonly rows: TtlCache<ApiKeyRow | null>;
  /** The hash of each key id read, to drop a key named by id. */
  private readonly hashes = new Map<string, string>();

  constructor(
    clock: () => Date = () => new Date(),
    private readonly bus?: CacheBus,
  ) {
    this.rows = new TtlCache(clock, CACHE_TTL_MS);
    bus?.onChange((change) => {
      if (change.kind === 'all') {
        this.rows.clear();
        this.hashes.clear();
      } else if (change.kind === 'key') {
        const hash = this.hashes.get(change.id);
        if (hash !== undefined) this.rows.delete(hash);
      }
    });
  }

  /** How many hashes are cached. */
  get size(): number {
    return this.rows.size;
  }

  /** The key with this hash, from the cache while fresh, else from the database. */
  lookup(db: Db, keyHash: string): Promise<ApiKeyRow | null> {
    return this.rows.get(keyHash, async () => {
      const row = (await findApiKeyByHash(db, keyHash)) ?? null;
      if (row) {
        if (this.hashes.size >= 10_000) this.hashes.clear();
        this.hashes.set(row.id, row.key_hash);
      }
      return row;
    });
  }

  /** The key changed (revoked): read it again here, and tell the other instances. */
  forget(row: Pick<ApiKeyRow, 'id' | 'key_hash'>): void {
    this.rows.delete(row.key_hash);
    this.bus?.publish({ kind: 'key', id: row.id });
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
