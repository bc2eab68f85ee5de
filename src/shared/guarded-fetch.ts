import { fetchDocument } from './document-fetch';
import { parseFetchedJson, UnstorableJsonError } from './storable-json';

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

export class FetchError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * GETs a JSON document from a counterparty (brand.json, a JWKS): https only, public addresses
 * only (checked at connect time, after DNS), no redirects, a byte cap and a deadline, and the
 * document as strict as a webhook body (parseFetchedJson). Throws a FetchError saying what
 * failed, without echoing the response.
 */
export async function fetchJson(url: string, options: { overrides?: OriginOverrides; maxBytes: number; timeoutMs?: number }): Promise<unknown> {
  const answer = await fetchDocument(url, { ...options, maxRedirects: 0 });
  if (answer.error) throw new FetchError(`${url}: ${answer.error.message}`);
  if (answer.status !== 200) throw new FetchError(`${url}: HTTP ${answer.status}`, answer.status);
  try {
    return parseFetchedJson(answer.body);
  } catch (err) {
    throw new FetchError(`${url}: ${err instanceof UnstorableJsonError ? err.message : 'not JSON'}`);
  }
}

