import fs from 'node:fs';
import path from 'node:path';
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type JsonWebKey, randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { SignatureAlgorithm, WebhookSigningKey } from './webhook-signer';

/** `adcp_use` published on the keys: the spec's `request-signing`, or `webhook-signing` for 3.0-era verifiers. */
export type KeyPurpose = 'request-signing' | 'webhook-signing';

const storedKey = z
  .object({
    kty: z.enum(['OKP', 'EC']),
    crv: z.enum(['Ed25519', 'P-256']),
    x: z.string().min(1),
    y: z.string().optional(),
    d: z.string().min(1),
    kid: z.string().min(1),
    created_at: z.string().optional(),
    /** Set when a newer key replaced this one: published until then, never used to sign. */
    retire_after: z.string().nullable().optional(),
    /** What the key signs for, when not the keystore's own purpose (see SigningKeystore). */
    adcp_use: z.enum(['request-signing', 'webhook-signing']).optional(),
  })
  .passthrough();
const storedKeySet = z.object({ keys: z.array(storedKey).min(1) });
type StoredKey = z.infer<typeof storedKey>;

/** A rotated-out key stays published this long: a day of retries and every JWKS cache outlive it. */
const RETIREMENT_GRACE_MS = 24 * 3600_000;

const algOf = (k: StoredKey): SignatureAlgorithm => (k.kty === 'OKP' ? 'ed25519' : 'ecdsa-p256-sha256');

export interface KeystoreSource {
  /** A JWK set with private members (`WEBHOOK_SIGNING_KEYS`): used as given, never written. */
  inline?: string;
  /** The key file (`WEBHOOK_SIGNING_KEYS_FILE`): created with one Ed25519 key on first use, mode 0600. */
  file: string;
}

/**
 * A set of signing keys: the seller's webhook-signing keys (published in `/.well-known/jwks.json`
 * with `adcp_use`), and the embedded OAuth server's token keys (no `adcp_use`). Signs with the
 * newest key; publishes every key not yet past its retirement. Notices a rotation another process
 * wrote to the file (`adcp-gateway keys rotate`) within a second.
 *
 * The spec signs webhooks with `request-signing` keys; AdCP 3.0 verifiers (`@adcp/sdk` 6.x) accept
 * only `webhook-signing` ones (which the spec accepts too, as deprecated). So a keystore of
 * `request-signing` keys kept in a file also holds a `webhook-signing` key, made on first use, for
 * webhooks to 3.0 buyers: two keys, never one key under two purposes.
 */
export class SigningKeystore {
  private keys: StoredKey[] = [];
  private loadedMtimeMs = -1;
  private checkedAt = 0;
  private signers = new Map<KeyPurpose | null, WebhookSigningKey>();

  constructor(
    private readonly source: KeystoreSource,
    /** `adcp_use` on the published keys; null for keys that sign something other than AdCP requests. */
    private readonly purpose: KeyPurpose | null,
    private readonly label = 'webhook signing keys',
  ) {
    this.reload();
  }

  /** The key to sign with now, for `use` (the keystore's purpose by default; it stands in when no key has that use). */
  activeKey(use?: KeyPurpose): WebhookSigningKey {
    this.refresh();
    const wanted = use && this.keys.some((k) => this.useOf(k) === use) ? use : this.purpose;
    let signer = this.signers.get(wanted);
    if (!signer) {
      const mine = this.keys.filter((k) => this.useOf(k) === wanted);
      const k = mine.filter((key) => !key.retire_after).at(-1) ?? mine.at(-1) ?? this.keys.at(-1)!;
      signer = { kid: k.kid, alg: algOf(k), privateKey: createPrivateKey({ key: k as JsonWebKey, format: 'jwk' }) };
      this.signers.set(wanted, signer);
    }
    return signer;
  }

  private useOf(k: StoredKey): KeyPurpose | null {
    return k.adcp_use ?? this.purpose;
  }

  /** The public JWK set: verify-only, `adcp_use` as configured. */
  publicJwks(now = Date.now()): { keys: Record<string, unknown>[] } {
    this.refresh();
    return {
      keys: this.keys
        .filter((k) => !k.retire_after || Date.parse(k.retire_after) > now)
        .map((k) => ({
          kty: k.kty,
          crv: k.crv,
          x: k.x,
          ...(k.y ? { y: k.y } : {}),
          kid: k.kid,
          alg: k.kty === 'OKP' ? 'EdDSA' : 'ES256',
          use: 'sig',
          key_ops: ['verify'],
          ...(this.useOf(k) ? { adcp_use: this.useOf(k) } : {}),
        })),
    };
  }

  /**
   * Adds a new signing key to the key file for each use it holds keys for; the previous ones
   * retire after the grace period. Answers the new key of the file's own purpose.
   */
  static rotate(file: string, alg: SignatureAlgorithm = 'ed25519', now = new Date()): string {
    const existing = fs.existsSync(file) ? storedKeySet.parse(JSON.parse(fs.readFileSync(file, 'utf8'))).keys : [];
    const retireAfter = new Date(now.getTime() + RETIREMENT_GRACE_MS).toISOString();
    const uses = [...new Set(existing.map((k) => k.adcp_use))];
    const fresh = (uses.length ? uses : [undefined]).map((use) => ({ ...generateKey(alg, now), ...(use ? { adcp_use: use } : {}) }));
    writeKeyFile(file, [...existing.map((k) => ({ ...k, retire_after: k.retire_after ?? retireAfter })), ...fresh]);
    return (fresh.find((k) => !k.adcp_use) ?? fresh[0]!).kid;
  }

  private refresh(): void {
    if (this.source.inline !== undefined) return;
    const now = Date.now();
    if (now - this.checkedAt < 1000) return;
    this.checkedAt = now;
    const mtime = fs.statSync(this.source.file, { throwIfNoEntry: false })?.mtimeMs ?? -1;
    if (mtime !== this.loadedMtimeMs) this.reload();
  }

  private reload(): void {
    const text = this.source.inline ?? readOrCreate(this.source.file);
    const parsed = storedKeySet.safeParse(JSON.parse(text));
    if (!parsed.success) {
      throw new Error(`${this.label}: ${parsed.error.issues[0]!.path.join('.')}: ${parsed.error.issues[0]!.message}`);
    }
    for (const k of parsed.data.keys) createPublicKey({ key: k as JsonWebKey, format: 'jwk' }); // fails fast on a bad key
    this.keys = parsed.data.keys;
    this.signers.clear();
    if (this.source.inline === undefined && this.purpose === 'request-signing' && !this.keys.some((k) => k.adcp_use === 'webhook-signing')) {
      // The AdCP 3.0 webhook key (see the class comment), added beside the existing ones.
      this.keys = [...this.keys, { ...generateKey(algOf(this.keys.at(-1)!), new Date()), adcp_use: 'webhook-signing' }];
      writeKeyFile(this.source.file, this.keys);
    }
    if (this.source.inline === undefined) this.loadedMtimeMs = fs.statSync(this.source.file).mtimeMs;
  }
}

function readOrCreate(file: string): string {
  // Synchronous on purpose: it runs once, at start, before the server listens.
  if (!fs.existsSync(file)) createKeyFile(file, [generateKey('ed25519', new Date())]);
  return fs.readFileSync(file, 'utf8');
}

/**
 * Writes the first key file unless one appeared meanwhile: instances starting together on a shared
 * data directory all end up with the one that was linked in first, never each with its own.
 */
function createKeyFile(file: string, keys: StoredKey[]): void {
  const tmp = staged(file, keys);
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.unlinkSync(tmp);
  }
}

function generateKey(alg: SignatureAlgorithm, now: Date): StoredKey {
  const { privateKey } = alg === 'ed25519' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = privateKey.export({ format: 'jwk' }) as StoredKey;
  return { ...jwk, kid: jwkThumbprint(jwk), created_at: now.toISOString(), retire_after: null };
}

/** RFC 7638 thumbprint: the required public members in lexicographic order, no whitespace. */
export function jwkThumbprint(k: { kty: string; crv: string; x: string; y?: string }): string {
  const members = k.kty === 'OKP' ? { crv: k.crv, kty: k.kty, x: k.x } : { crv: k.crv, kty: k.kty, x: k.x, y: k.y };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

function writeKeyFile(file: string, keys: StoredKey[]): void {
  fs.renameSync(staged(file, keys), file);
}

/** The key file's new content, written beside it (readable by its owner only); returns its path. */
function staged(file: string, keys: StoredKey[]): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Random, not the pid alone: containers sharing a volume are all pid 1.
  const tmp = `${file}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify({ keys }, null, 2) + '\n', { mode: 0o600 });
  return tmp;
}
