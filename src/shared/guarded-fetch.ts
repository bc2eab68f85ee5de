import { fetchDocument } from './document-fetch';
import type { OriginOverrides } from './origin-overrides';
import { parseFetchedJson, UnstorableJsonError } from './storable-json';

// Kept importable from here, where its callers have always found them.

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

