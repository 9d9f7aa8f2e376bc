// Identifiers and secrets: time-ordered UUIDv7 ids, API keys and their hashes.
import { createHash, randomBytes } from 'node:crypto';

/** A UUIDv7 (RFC 9562): 48 bits of milliseconds, then random bits; sorts by creation time. */
export function uuidv7(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export type KeyKind = 'rest' | 'mcp' | 'admin';
const PREFIX: Record<KeyKind, string> = { rest: 'tk_live_', mcp: 'tk_mcp_', admin: 'tk_admin_' };

/** A new secret of the given kind, e.g. `tk_live_3kF...`; 32 random bytes, base64url. */
export function newSecret(kind: KeyKind): string {
  return PREFIX[kind] + randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}
