import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * Who a public event belongs to, as the public stream says it (docs/events.md, "Tenants"). The
 * public topics hold every buyer's events side by side; an operator scopes them by this key. It is
 * an HMAC of the owner org under the operator's secret: the same org always gets the same key (as
 * long as the secret stays), and the key cannot be turned back into the org — an unkeyed hash
 * could, since org names are few and guessable.
 */
export type TenantKeyer = (org: string) => string;

/** The tenant of events that belong to no buyer (the registry's: revalidations, the change feed). */
export const SHARED_TENANT = 'shared';

/** `t_` and 22 base64url characters (132 bits of the HMAC): never `shared`, never holds `/`. */
const KEY_PATTERN = /^t_[A-Za-z0-9_-]{22}$/;
export const isTenantKey = (s: string): boolean => KEY_PATTERN.test(s);

/** The smallest secret accepted: 32 bytes, as an HMAC-SHA256 key should be. */
const MIN_SECRET_BYTES = 32;

export function tenantKeyer(secret: Buffer): TenantKeyer {
  if (secret.length < MIN_SECRET_BYTES) throw new Error(`the public tenant secret must be at least ${MIN_SECRET_BYTES} bytes`);
  const known = new Map<string, string>();
  return (org) => {
    let key = known.get(org);
    if (key === undefined) {
      // A label first, so this secret's HMACs mean nothing anywhere else it might be reused.
      key = `t_${createHmac('sha256', secret).update('adcp-gateway public tenant\u0000').update(org).digest('base64url').slice(0, 22)}`;
      if (known.size >= 10_000) known.clear();
      known.set(org, key);
    }
    return key;
  };
}

/**
 * The operator's tenant secret from its file, created (mode 0600, 32 random bytes as base64url)
 * when there is none. Every instance publishing to the same topics, and `events tail`, must read
 * the same file: another secret gives every tenant another key. Two instances creating it at
 * once agree: the file is linked into place only where none exists, and the loser reads the winner's.
 */
export function loadTenantSecret(file: string): Buffer {
  const read = () => {
    const text = fs.readFileSync(file, 'utf8').trim();
    const secret = Buffer.from(text, 'base64url');
    if (secret.length < MIN_SECRET_BYTES || secret.toString('base64url') !== text) throw new Error(`${file}: expected at least ${MIN_SECRET_BYTES} bytes as base64url (one line)`);
    return secret;
  };
  if (fs.existsSync(file)) return read();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, randomBytes(MIN_SECRET_BYTES).toString('base64url') + '\n', { mode: 0o600 });
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return read();
}
