import crypto from 'node:crypto';

/**
 * One-shot hashing (`crypto.hash`, Node ≥ 20.12) skips the Hash object a createHash chain
 * allocates per call; older Node 20 releases get the chain.
 */
const oneShot = (crypto as { hash?: (alg: string, data: crypto.BinaryLike, enc: crypto.BinaryToTextEncoding | 'buffer') => string | Buffer }).hash;

/** SHA-256 of the bytes (a string is hashed as its UTF-8 bytes, as createHash does). */
export function sha256(data: Uint8Array | string): Buffer;
export function sha256(data: Uint8Array | string, encoding: crypto.BinaryToTextEncoding): string;
export function sha256(data: Uint8Array | string, encoding?: crypto.BinaryToTextEncoding): Buffer | string {
  if (oneShot) return oneShot('sha256', data, encoding ?? 'buffer');
  const h = crypto.createHash('sha256').update(data);
  return encoding ? h.digest(encoding) : h.digest();
}

/**
 * RFC 9530 `Content-Digest` over the exact bytes sent. The AdCP spec (§5, webhook
 * authentication) wants the sha-256 value in base64url without padding; verifiers, ours and
 * `@adcp/sdk`'s, accept standard base64 too.
 */
export function contentDigest(body: Uint8Array | string, encoding: 'base64url' | 'base64' = 'base64url'): string {
  return `sha-256=:${sha256(body, encoding)}:`;
}
