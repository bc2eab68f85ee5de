import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { canonicalTarget, MalformedTargetUriError } from '../signing/canonical-url';
import { AppError } from './errors';

/** True for a globally routable unicast address (not RFC 1918, loopback, link-local, CGNAT, ULA, …). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

/**
 * What a URL's hostname stands for: an IP literal (IPv6 brackets stripped) is its own address
 * (`literal`), a name is what DNS answers now (no addresses when it does not resolve).
 * `nonPublic` is the first of them that is not publicly routable, if any.
 */
export async function addressesOf(hostname: string): Promise<{ literal: boolean; addresses: string[]; nonPublic: string | undefined }> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host) !== 0;
  const addresses = literal ? [host] : (await lookup(host, { all: true, verbatim: true }).catch(() => [])).map((a) => a.address);
  return { literal, addresses, nonPublic: addresses.find((a) => !isPublicAddress(a)) };
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
  const { literal, nonPublic } = await addressesOf(parsed.hostname);
  if (nonPublic) throw bad(`${literal ? 'points at' : 'resolves to'} a non-public address (${nonPublic})`);
}
