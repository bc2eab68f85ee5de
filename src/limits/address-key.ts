import ipaddr from 'ipaddr.js';

/** Budget keys of IPv6 addresses already seen (an address's key never changes): parsing is the costly part. */
const keys = new Map<string, string>();
const MAX_KEYS = 10_000;

/**
 * What a per-address budget counts a client address under: an IPv4 address as it is, an
 * IPv4-mapped IPv6 address (`::ffff:198.51.100.7`, as a dual-stack socket reports IPv4 peers) as
 * its IPv4 address, and any other IPv6 address as its /64 (`2001:db8:1:2::/64`). One subscriber
 * is given a whole /64 (RFC 6177; a host picks new addresses in it at will, RFC 8981), so budgets
 * per full IPv6 address would give one client 2^64 budgets. Every per-address budget (the
 * anonymous request and GraphQL budgets, failed authentications, the webhook receiver's rate,
 * bulk brand resolution and its share of the crawl queue, subscription sockets) counts by this key.
 */
export function addressBudgetKey(address: string): string {
  // IPv4 (and whatever is not an address: counted as it is), without a parse.
  if (!address.includes(':')) return address;
  let key = keys.get(address);
  if (key !== undefined) return key;
  key = keyOfIpv6(address);
  if (keys.size >= MAX_KEYS) keys.clear();
  keys.set(address, key);
  return key;
}

function keyOfIpv6(address: string): string {
  let parsed: ipaddr.IPv6;
  try {
    // A zone (`fe80::1%eth0`) names the interface, not the host: the /64 is what counts.
    parsed = ipaddr.IPv6.parse(address.replace(/%.*$/, ''));
  } catch {
    return address;
  }
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  // The first 64 bits, in RFC 5952's form (`2001:db8:1:2::`), whatever form the address came in.
  return `${new ipaddr.IPv6([...parsed.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}
