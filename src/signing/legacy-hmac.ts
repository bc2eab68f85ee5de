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

export type LegacyHmacFailure = 'signature_missing' | 'timestamp_malformed' | 'timestamp_out_of_window' | 'signature_mismatch';

/** The legacy scheme's clock-skew bound (spec §8). */
export const LEGACY_SKEW_SECONDS = 300;

/**
 * Receiver side of legacy HMAC, in the spec's order: both headers present, a numeric timestamp
 * within ±300 s, then a constant-time compare of the exact bytes received. Returns the failure,
 * or undefined when the signature is good.
 */
export function checkLegacyHmac(
  secret: string,
  headers: { signature?: string | null; timestamp?: string | number | null },
  body: Buffer | string,
  now = Math.floor(Date.now() / 1000),
): LegacyHmacFailure | undefined {
  const { signature, timestamp } = headers;
  if (!signature || timestamp === undefined || timestamp === null || timestamp === '') return 'signature_missing';
  if (!/^\d{1,12}$/.test(String(timestamp))) return 'timestamp_malformed';
  if (Math.abs(now - Number(timestamp)) > LEGACY_SKEW_SECONDS) return 'timestamp_out_of_window';
  return hmacMatches(signature, hmacSignature(secret, String(timestamp), body)) ? undefined : 'signature_mismatch';
}

/** A secret is refused at registration when short or without entropy (one repeated character). */
export function weakLegacySecret(secret: string): string | undefined {
  if (secret.length < MIN_LEGACY_SECRET_LENGTH) return `must be at least ${MIN_LEGACY_SECRET_LENGTH} characters`;
  if (/^(.)\1*$/s.test(secret)) return 'must not repeat a single character';
  return undefined;
}
