// Encryption at rest of secrets (push provider credentials, identity secrets): AES-256-GCM with a
// key derived from SECRET_KEY (scrypt, fixed salt per purpose, so a value sealed for one purpose
// never opens as another), a random 96-bit IV per value, and the app id as associated data so a
// sealed value copied onto another app's row does not open.
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';

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
