import { randomFillSync, sign, type KeyObject } from 'node:crypto';
import { cachedCanonicalTarget } from './canonical-url';
import { contentDigest } from './content-digest';
import { signatureBase, signatureParams } from './signature-base';

export const WEBHOOK_SIGNING_TAG = 'adcp/webhook-signing/v1';
/** The fixed covered set of the AdCP webhook profile, in the order the SDKs emit it. */
export const WEBHOOK_COMPONENTS = ['@method', '@target-uri', '@authority', 'content-type', 'content-digest'] as const;
/** The profile caps `expires - created` at 300 s. */
export const MAX_SIGNATURE_VALIDITY_SECONDS = 300;

export type SignatureAlgorithm = 'ed25519' | 'ecdsa-p256-sha256';

export interface WebhookSigningKey {
  kid: string;
  alg: SignatureAlgorithm;
  privateKey: KeyObject;
}

export interface SignedWebhook {
  /** The headers to send with exactly the body that was signed. */
  headers: Record<'Content-Type' | 'Content-Digest' | 'Signature-Input' | 'Signature', string>;
  signatureBase: string;
}

/** Raw signature bytes: Ed25519, or ECDSA P-256 in IEEE P1363 `r||s` form (RFC 9421 §3.3.2), not DER. */
export function signBytes(alg: SignatureAlgorithm, data: Buffer, key: KeyObject): Buffer {
  return alg === 'ed25519' ? sign(null, data, key) : sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' });
}

/**
 * Nonce bytes come from the CSPRNG in batches: one `randomBytes(16)` call per signature was a
 * tenth of signing (a native call and a buffer each). Every 16 bytes are used once, in order,
 * and the batch is refilled, never reused (as Node's own randomUUID does with its entropy cache).
 */
const NONCE_BYTES = 16;
const noncePool = Buffer.alloc(NONCE_BYTES * 256);
let nonceOffset = noncePool.length;

function freshNonce(): string {
  if (nonceOffset === noncePool.length) {
    randomFillSync(noncePool);
    nonceOffset = 0;
  }
  const nonce = noncePool.toString('base64url', nonceOffset, nonceOffset + NONCE_BYTES);
  nonceOffset += NONCE_BYTES;
  return nonce;
}

/**
 * Signs one webhook POST under the AdCP RFC 9421 profile (label `sig1`). Call it once per
 * attempt: every retry needs a fresh `created` and nonce, while the body bytes stay the same.
 */
export function signWebhook(
  request: { method?: string; url: string; body: Buffer | string },
  key: WebhookSigningKey,
  options: {
    now?: number;
    validitySeconds?: number;
    nonce?: string;
    /** base64url (the spec's) by default; standard base64 reproduces the published vectors. */
    digestEncoding?: 'base64url' | 'base64';
    /** The profile tag: webhooks by default; `adcp/request-signing/v1` signs a request this agent makes. */
    tag?: string;
  } = {},
): SignedWebhook {
  const created = options.now ?? Math.floor(Date.now() / 1000);
  const validity = Math.min(options.validitySeconds ?? MAX_SIGNATURE_VALIDITY_SECONDS, MAX_SIGNATURE_VALIDITY_SECONDS);
  const { targetUri, authority } = cachedCanonicalTarget(request.url);
  const digest = contentDigest(request.body, options.digestEncoding);
  const params = signatureParams(WEBHOOK_COMPONENTS, [
    ['created', created],
    ['expires', created + validity],
    ['nonce', options.nonce ?? freshNonce()],
    ['keyid', key.kid],
    ['alg', key.alg],
    ['tag', options.tag ?? WEBHOOK_SIGNING_TAG],
  ]);
  const base = signatureBase(
    [
      ['@method', (request.method ?? 'POST').toUpperCase()],
      ['@target-uri', targetUri],
      ['@authority', authority],
      ['content-type', 'application/json'],
      ['content-digest', digest],
    ],
    params,
  );
  const signature = signBytes(key.alg, Buffer.from(base, 'utf8'), key.privateKey).toString('base64url');
  return {
    headers: { 'Content-Type': 'application/json', 'Content-Digest': digest, 'Signature-Input': `sig1=${params}`, Signature: `sig1=:${signature}:` },
    signatureBase: base,
  };
}
