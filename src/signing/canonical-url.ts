import { isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import { LRUCache } from 'lru-cache';

/** The URL cannot be signed or verified (AdCP's `*_target_uri_malformed`). */
export class MalformedTargetUriError extends Error {
  constructor(reason: string) {
    super(`malformed target URI: ${reason}`);
  }
}

export interface CanonicalTarget {
  /** `@target-uri`: scheme://authority/path?query, canonical per AdCP URL canonicalization. */
  targetUri: string;
  /** `@authority`: canonical `host[:port]`. */
  authority: string;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;
const DEFAULT_PORTS: Record<string, string> = { http: '80', https: '443' };

/**
 * AdCP URL canonicalization (docs/reference/url-canonicalization, 8 steps) for `@target-uri` and
 * `@authority`. Hand-written rather than WHATWG `URL`: WHATWG accepts empty DNS labels, re-encodes
 * raw characters and never decodes `%41`, each of which the conformance vectors pin differently.
 */
export function canonicalTarget(input: string): CanonicalTarget {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?(?:#.*)?$/s.exec(input);
  if (!m) throw new MalformedTargetUriError('not an absolute URL with an authority');
  const scheme = m[1]!.toLowerCase();
  if (scheme !== 'https' && scheme !== 'http') throw new MalformedTargetUriError(`unsupported scheme ${scheme}`);
  const authority = canonicalAuthority(scheme, m[2]!);
  const path = normalizePercentEncoding(removeDotSegments(m[3] || '/'));
  return { targetUri: `${scheme}://${authority}${path}${m[4] ?? ''}`, authority };
}

/**
 * A signer or receiver sees the same few endpoint URLs over and over, and canonicalTarget is a
 * pure function of the string: its answers are kept by that string (frozen, as they are shared).
 * Malformed URLs are not kept; they throw every time.
 */
const canonicalTargets = new LRUCache<string, CanonicalTarget>({ max: 1000 });

export function cachedCanonicalTarget(input: string): CanonicalTarget {
  let target = canonicalTargets.get(input);
  if (target === undefined) {
    target = Object.freeze(canonicalTarget(input));
    canonicalTargets.set(input, target);
  }
  return target;
}

function canonicalAuthority(scheme: string, raw: string): string {
  const hostPort = raw.slice(raw.lastIndexOf('@') + 1); // step 3: userinfo dropped
  if (hostPort === '') throw new MalformedTargetUriError('authority missing host');
  let host: string;
  let port: string;
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close < 0) throw new MalformedTargetUriError('IPv6 literal missing closing bracket');
    const literal = hostPort.slice(1, close);
    if (literal.includes('%')) throw new MalformedTargetUriError('IPv6 zone identifier');
    if (!isIPv6(literal)) throw new MalformedTargetUriError('invalid IPv6 literal');
    host = `[${literal.toLowerCase()}]`;
    const rest = hostPort.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) throw new MalformedTargetUriError('garbage after IPv6 literal');
    port = rest.slice(1);
  } else {
    const colons = hostPort.split(':').length - 1;
    if (colons > 1) throw new MalformedTargetUriError('IPv6 literal not bracketed');
    const [name, p = ''] = hostPort.split(':') as [string, string?];
    host = canonicalHostName(name);
    port = p;
  }
  if (port !== '' && (!/^\d{1,5}$/.test(port) || Number(port) > 65535)) throw new MalformedTargetUriError(`invalid port ${port}`);
  if (port === DEFAULT_PORTS[scheme]) port = '';
  return port ? `${host}:${Number(port)}` : host;
}

function canonicalHostName(name: string): string {
  if (name === '') throw new MalformedTargetUriError('authority missing host');
  if (name.includes('%')) throw new MalformedTargetUriError('percent-encoded host');
  // Step 2: UTS-46 ToASCII (case-folds too), then exactly one trailing root dot removed.
  const ascii = /^[\x21-\x7e]*$/.test(name) ? name.toLowerCase() : domainToASCII(name);
  if (ascii === '') throw new MalformedTargetUriError('host is not a valid domain name');
  const trimmed = ascii.endsWith('.') ? ascii.slice(0, -1) : ascii;
  if (trimmed.split('.').some((label) => label === '')) throw new MalformedTargetUriError('empty DNS label in host');
  return trimmed;
}

/** RFC 3986 §5.2.4, on the raw path: `//` survives byte for byte, `/./` and `/../` resolve. */
export function removeDotSegments(path: string): string {
  let input = path;
  const output: string[] = [];
  while (input.length > 0) {
    if (input.startsWith('../')) input = input.slice(3);
    else if (input.startsWith('./')) input = input.slice(2);
    else if (input.startsWith('/./')) input = input.slice(2);
    else if (input === '/.') input = '/';
    else if (input.startsWith('/../')) {
      input = input.slice(3);
      output.pop();
    } else if (input === '/..') {
      input = '/';
      output.pop();
    } else if (input === '.' || input === '..') input = '';
    else {
      const segment = /^\/?[^/]*/.exec(input)![0];
      output.push(segment);
      input = input.slice(segment.length);
    }
  }
  return output.join('');
}

/** Step 6: `%xx` of an unreserved character is decoded; every other escape gets uppercase hex. */
function normalizePercentEncoding(path: string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => {
    const ch = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
}
