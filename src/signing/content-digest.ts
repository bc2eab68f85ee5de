import { createHash } from 'node:crypto';

/**
 * RFC 9530 `Content-Digest` over the exact bytes sent. The AdCP spec (§5, webhook
 * authentication) wants the sha-256 value in base64url without padding; verifiers, ours and
 * `@adcp/sdk`'s, accept standard base64 too.
 */
export function contentDigest(body: Uint8Array | string, encoding: 'base64url' | 'base64' = 'base64url'): string {
  return `sha-256=:${createHash('sha256').update(body).digest(encoding)}:`;
}
