import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { canonicalTarget, MalformedTargetUriError } from '../signing/canonical-url';
import { AppError } from '../shared/errors';

/** True for a globally routable unicast address (not RFC 1918, loopback, link-local, CGNAT, ULA, …). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

/**
 * Registration-time check of a buyer-supplied webhook URL: https, signable, and not pointing into
 * a private network. A name that does not resolve now is accepted (DNS may be down): the
 * delivery agent checks the address again at connect time, which is the guard that counts.
 * `allowPrivate` (ALLOW_PRIVATE_WEBHOOK_URLS=1) is the test seam for loopback receivers.
 */
export async function assertDeliverableUrl(url: string, field: string, allowPrivate: boolean): Promise<void> {
  const bad = (why: string) => new AppError('VALIDATION_ERROR', `webhook URL ${why}`, field);
  let parsed: URL;
  try {
    parsed = new URL(url);
    canonicalTarget(url);
  } catch (err) {
    throw bad(err instanceof MalformedTargetUriError ? `cannot be signed: ${err.message}` : 'is not a valid absolute URL');
  }
  if (parsed.username || parsed.password) throw bad('must not carry credentials');
  if (allowPrivate) {
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw bad('must be http(s)');
    return;
  }
  if (parsed.protocol !== 'https:') throw bad('must use https');
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw bad(`points at a non-public address (${host})`);
    return;
  }
  const addresses = await lookup(host, { all: true, verbatim: true }).catch(() => []);
  const inner = addresses.find((a) => !isPublicAddress(a.address));
  if (inner) throw bad(`resolves to a non-public address (${inner.address})`);
}
