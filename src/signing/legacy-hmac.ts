import { createHmac, timingSafeEqual } from 'node:crypto';

/** The legacy scheme's shared secrets must be at least this long (spec §8). */
export const MIN_LEGACY_SECRET_LENGTH = 32;

/**
 * Legacy HMAC-SHA256 webhook signature (deprecated, removed in AdCP 4.0): `sha256=` + hex of
 * HMAC-SHA256 keyed with the secret's UTF-8 bytes over `{timestamp}.{raw_body}`.
 */
export function hmacSignature(secret: string, timestamp: number | string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex')}`;
}

/** The two headers a legacy-HMAC delivery carries. */
export function hmacHeaders(secret: string, body: Buffer | string, now = Math.floor(Date.now() / 1000)): Record<string, string> {
  return { 'X-ADCP-Signature': hmacSignature(secret, now, body), 'X-ADCP-Timestamp': String(now) };
}

/** Constant-time check of a presented `sha256=<hex>` value (length mismatch fails before comparing). */
export function hmacMatches(presented: string | null | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
