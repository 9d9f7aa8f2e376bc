// Identifiers and secrets: time-ordered UUIDv7 ids, API keys and their hashes.
import { createHash, randomBytes, randomFillSync } from 'node:crypto';

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
/** Random bytes drawn in blocks: one call of the generator per 256 ids instead of one per id. */
const pool = Buffer.alloc(2560);
let poolOffset = pool.length;

/** A UUIDv7 (RFC 9562): 48 bits of milliseconds, then random bits; sorts by creation time. */
export function uuidv7(now: number = Date.now()): string {
  if (poolOffset + 10 > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const r = poolOffset;
  poolOffset += 10;
  const hex = (i: number) => HEX[pool[r + i]!]!;
  const ms = now.toString(16).padStart(12, '0').slice(-12);
  return (
    `${ms.slice(0, 8)}-${ms.slice(8)}-${HEX[0x70 | (pool[r]! & 0x0f)]}${hex(1)}-` +
    `${HEX[0x80 | (pool[r + 2]! & 0x3f)]}${hex(3)}-${hex(4)}${hex(5)}${hex(6)}${hex(7)}${hex(8)}${hex(9)}`
  );
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
