import type { ValidationError, ValidationWarning } from './validate';

// What one revalidation of a publisher's adagents.json found (recorded in AdagentsRevalidated,
// events.ts); src/application/adagents.ts fetches and judges the file.

/** How the file was found. */
export type DiscoveryMethod = 'direct' | 'authoritative_location' | 'ads_txt_manager';
/** Whose authority it carries: the publisher's own domain, or a manager's adagents.json named in ads.txt. */
export type Authority = 'domain' | 'adagents_authoritative';

export interface RevalidationResult {
  domain: string;
  adagents_valid: boolean;
  checked_at: string;
  error?: string;
  issues: { errors: ValidationError[]; warnings: ValidationWarning[] };
  properties_count: number;
  authorized_agents_count: number;
  status_code?: number;
  response_bytes?: number;
  resolved_url?: string;
  discovery_method: DiscoveryMethod;
  authority: Authority;
  manager_domain?: string;
}
