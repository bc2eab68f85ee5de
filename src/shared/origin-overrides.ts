/**
 * `REGISTRY_ORIGIN_OVERRIDES` (a test seam, DESIGN.md §4): `domain=http://127.0.0.1:8080,…` sends
 * live fetches for those domains to that origin (path and query kept), and only those may reach
 * a private address.
 */
export type OriginOverrides = ReadonlyMap<string, string>;

export function parseOriginOverrides(value: string | undefined): OriginOverrides {
  const out = new Map<string, string>();
  for (const pair of (value ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const [domain, origin] = pair.split('=');
    out.set(domain!.toLowerCase(), origin!.replace(/\/$/, ''));
  }
  return out;
}
