import type { RevalidationResult } from './revalidation';

/**
 * One revalidation of a publisher's adagents.json. `transient` failures (timeouts, connection or
 * network errors, 5xx and friends) say nothing about the file, so what an earlier valid
 * revalidation recorded stays; a valid file or an authoritative negative (404 / 410, or a file
 * with validation errors) replaces it.
 */
export type PublisherEvent = {
  readonly type: 'AdagentsRevalidated';
  readonly data: { readonly domain: string; readonly result: RevalidationResult; readonly manifest?: Record<string, unknown>; readonly transient: boolean; readonly at: string };
};

export const publisherStream = (domain: string) => `publisher-${domain}`;

export function isTransient(result: RevalidationResult): boolean {
  if (result.adagents_valid) return false;
  const fields = new Set(result.issues.errors.map((e) => e.field));
  if (['timeout', 'connection', 'network', 'json', 'authoritative_location'].some((f) => fields.has(f))) return true;
  const s = result.status_code;
  return s !== undefined && s !== 200 && s !== 404 && s !== 410;
}
