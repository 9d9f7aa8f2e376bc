// Encryption at rest of secrets (push provider credentials, identity secrets): AES-256-GCM with a
// key derived from SECRET_KEY (scrypt, fixed salt per purpose, so a value sealed for one purpose
// never opens as another), a random 96-bit IV per value, and the app id as associated data so a
// sealed value copied onto another app's row does not open. While SECRET_KEY is rotated, values
// open with the current key or a previous one (SECRET_KEY_PREVIOUS) until they are sealed again.
// Without SECRET_KEY, an embedded installation generates one into its data directory.
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';

const VERSION = 'v1';
const keys = new Map<string, Buffer>();

/** What a sealed value is for; each purpose has its own derived key. */
export type SealPurpose = 'push-provider-secrets' | 'identity-secrets';

function keyFor(secretKey: string, purpose: SealPurpose): Buffer {
  const id = `${purpose}\0${secretKey}`;
  let key = keys.get(id);
  if (!key) {
    key = scryptSync(secretKey, `tally/${purpose}/v1`, 32);
    keys.set(id, key);
  }
  return key;
}

/** `v1:<iv>:<tag>:<ciphertext>` (base64url parts) of the JSON of `value`. */
export function seal(
  secretKey: string,
  appId: string,
  value: Record<string, string>,
  purpose: SealPurpose = 'push-provider-secrets',
): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyFor(secretKey, purpose), iv);
  cipher.setAAD(Buffer.from(appId));
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return [VERSION, iv, cipher.getAuthTag(), body]
    .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
    .join(':');
}

export class SecretsUnreadableError extends Error {}

/** Opens a value sealed by `seal`; throws SecretsUnreadableError when the key or app differ. */
export function open(
  secretKey: string,
  appId: string,
  sealed: string,
  purpose: SealPurpose = 'push-provider-secrets',
): Record<string, string> {
  const [version, iv, tag, body] = sealed.split(':');
  if (version !== VERSION || !iv || !tag || body === undefined) throw new SecretsUnreadableError('Unknown format');
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyFor(secretKey, purpose), Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(appId));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    const plain = Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as Record<string, string>;
  } catch {
    throw new SecretsUnreadableError('The secrets do not open with this SECRET_KEY');
  }
}

/** The keys a value may be sealed with: the current one first, then previous ones (a rotation). */
export interface KeyRing {
  readonly secretKey: string | undefined;
  readonly previousSecretKeys: readonly string[];
}

/** The ring's keys in the order they are tried; empty when the server has no SECRET_KEY. */
export function ringKeys(ring: KeyRing): string[] {
  return ring.secretKey ? [ring.secretKey, ...ring.previousSecretKeys.filter((k) => k !== ring.secretKey)] : [];
}

/**
 * Opens a value with the current key, else with a previous one. `current` says whether it was
 * sealed with the current key (a re-seal pass seals the others again). Throws
 * SecretsUnreadableError when no key of the ring opens it.
 */
export function openWithRing(
  ring: KeyRing,
  appId: string,
  sealed: string,
  purpose: SealPurpose = 'push-provider-secrets',
): { value: Record<string, string>; current: boolean } {
  const keys = ringKeys(ring);
  if (keys.length === 0) throw new SecretsUnreadableError('SECRET_KEY is not set');
  for (const [i, key] of keys.entries()) {
    try {
      return { value: open(key, appId, sealed, purpose), current: i === 0 };
    } catch (err) {
      if (!(err instanceof SecretsUnreadableError)) throw err;
    }
  }
  throw new SecretsUnreadableError('The secrets open with neither SECRET_KEY nor SECRET_KEY_PREVIOUS');
}

/** Where an embedded installation keeps the SECRET_KEY it generated: beside credentials.json. */
export const SECRET_KEY_FILE = 'secret-key';

/** The key generated into `dataDir` earlier, or undefined when there is none. */
export function readGeneratedSecretKey(dataDir: string): string | undefined {
  const file = path.join(dataDir, SECRET_KEY_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (text.length < 32) {
    throw new Error(
      `${file} does not hold a usable SECRET_KEY (it is shorter than 32 characters). Restore it from a backup, or set SECRET_KEY.`,
    );
  }
  return text;
}

/**
 * The data directory's generated key, made now (32 random bytes, mode 0600) when there is none.
 * Two processes starting together agree: the file is created exclusively and the loser reads it.
 */
export function generatedSecretKey(dataDir: string): { key: string; created: boolean } {
  const existing = readGeneratedSecretKey(dataDir);
  if (existing) return { key: existing, created: false };
  fs.mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, SECRET_KEY_FILE);
  const key = randomBytes(32).toString('base64url');
  try {
    fs.writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      return { key: readGeneratedSecretKey(dataDir)!, created: false };
    throw err;
  }
  fs.chmodSync(file, 0o600);
  return { key, created: true };
}

/**
 * The configuration with its SECRET_KEY resolved for this database. An operator's SECRET_KEY
 * always wins (a key generated earlier stays readable as a previous key, so its values are sealed
 * again). Without one, an embedded installation uses the key in its data directory, generated on
 * the first start; PostgreSQL gets none, since the instances sharing the database must share the
 * key and a file on one machine is not where it belongs.
 */
export function resolveSecretKey(config: Config, embedded: boolean): { config: Config; created: boolean } {
  if (config.secretKey) {
    const generated = embedded ? readGeneratedSecretKey(config.dataDir) : undefined;
    if (!generated || generated === config.secretKey || config.previousSecretKeys.includes(generated)) {
      return { config, created: false };
    }
    const previousSecretKeys = Object.freeze([...config.previousSecretKeys, generated]);
    return { config: Object.freeze({ ...config, previousSecretKeys }), created: false };
  }
  if (!embedded) return { config, created: false };
  const { key, created } = generatedSecretKey(config.dataDir);
  return { config: Object.freeze({ ...config, secretKey: key, secretKeySource: 'generated' as const }), created };
}
