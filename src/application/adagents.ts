import type { Authority, DiscoveryMethod, RevalidationResult } from '../domain/adagents/revalidation';
import { validateAdagents, type ValidationError, type ValidationWarning } from '../domain/adagents/validate';
import { fetchDocument, type FetchedDocument } from '../shared/document-fetch';
import type { OriginOverrides } from '../shared/origin-overrides';
import { parseFetchedJson, UnstorableJsonError } from '../shared/storable-json';

type Doc = Record<string, any>;
const MAX_BYTES = 10 * 1024 * 1024;

interface Found {
  doc?: Doc;
  errors: ValidationError[];
  warnings: ValidationWarning[];
  fetched: FetchedDocument;
  method: DiscoveryMethod;
}

const err = (field: string, message: string): ValidationError => ({ field, message, severity: 'error' });

/** What makes a parsed file unacceptable (a duplicate key, bytes that are not UTF-8, …), after a colon; nothing for text that is not JSON. */
const why = (e: unknown) => (e instanceof UnstorableJsonError ? `: ${e.message}` : '');

/** Finds a domain's adagents.json: the well-known file (≤ 3 same-site https redirects), then its authoritative_location. */
async function find(domain: string, overrides: OriginOverrides): Promise<Found> {
  const url = `https://${domain}/.well-known/adagents.json`;
  const fetched = await fetchDocument(url, { overrides, maxBytes: MAX_BYTES, maxRedirects: 3, sameSite: true });
  if (fetched.error) return { errors: [err(fetched.error.kind, fetched.error.message)], warnings: [], fetched, method: 'direct' };
  if (fetched.status !== 200) {
    return { errors: [err('http_status', fetched.status === 404 ? `File not found at ${url}` : `HTTP ${fetched.status} error fetching ${url}`)], warnings: [], fetched, method: 'direct' };
  }
  let doc: Doc;
  try {
    doc = parseFetchedJson(fetched.body) as Doc;
  } catch (e) {
    return { errors: [err('json', `Invalid JSON response from ${url}${why(e)}`)], warnings: [], fetched, method: 'direct' };
  }
  if (!doc || typeof doc !== 'object' || typeof doc.authoritative_location !== 'string') return { doc, errors: [], warnings: [], fetched, method: 'direct' };

  // A pointer: the file it names is the one that counts (no redirects, no further pointers).
  const location = doc.authoritative_location as string;
  let target: URL;
  try {
    target = new URL(location);
  } catch {
    return { errors: [err('authoritative_location', 'authoritative_location must be a valid URL')], warnings: [], fetched, method: 'authoritative_location' };
  }
  if (target.protocol !== 'https:') return { errors: [err('authoritative_location', 'Authoritative location must use HTTPS')], warnings: [], fetched, method: 'authoritative_location' };
  const auth = await fetchDocument(target.href, { overrides, maxBytes: MAX_BYTES, maxRedirects: 0 });
  const fail = (message: string): Found => ({ errors: [err('authoritative_location', message)], warnings: [], fetched: auth, method: 'authoritative_location' });
  if (auth.error) return fail(`Failed to fetch authoritative file: ${auth.error.message}`);
  if (auth.status >= 300 && auth.status < 400) return fail(`Redirect (HTTP ${auth.status}) from authoritative_location ${location}; redirects on the authoritative file are refused because they change the declared location`);
  if (auth.status === 404) return fail(`File not found at ${location}`);
  if (auth.status !== 200) return fail(`HTTP ${auth.status} error fetching ${location}`);
  let authDoc: Doc;
  try {
    authDoc = parseFetchedJson(auth.body) as Doc;
  } catch (e) {
    return fail(`Invalid JSON at authoritative location ${location}${why(e)}`);
  }
  if (authDoc && typeof authDoc === 'object' && typeof authDoc.authoritative_location === 'string') return fail('Authoritative file cannot be another URL reference (nested references not allowed)');
  return { doc: authDoc, errors: [], warnings: [], fetched: auth, method: 'authoritative_location' };
}

/** The last `MANAGERDOMAIN=` line of ads.txt not marked `# … noagents …`. */
export function managerDomainOf(adsTxt: string): string | undefined {
  let found: string | undefined;
  for (const line of adsTxt.split(/\r?\n/)) {
    const m = /^managerdomain\s*=\s*([A-Za-z0-9.-]+)(?:\s+#\s*(.*))?$/i.exec(line.trim());
    if (m && !/noagents/i.test(m[2] ?? '')) found = m[1]!.toLowerCase();
  }
  return found;
}

/** Whether a manager's file authorizes someone for this publisher explicitly (reference §2.5). */
function scopesPublisher(doc: Doc, publisher: string): boolean {
  const props: Doc[] = Array.isArray(doc.properties) ? doc.properties : [];
  const ours = props.filter((p) => p?.publisher_domain === publisher);
  return (Array.isArray(doc.authorized_agents) ? (doc.authorized_agents as Doc[]) : []).some((a) => {
    const pp: Doc[] = Array.isArray(a?.publisher_properties) ? a.publisher_properties : [];
    if (pp.some((p) => p?.publisher_domain === publisher || (Array.isArray(p?.publisher_domains) && p.publisher_domains.includes(publisher)))) return true;
    if (Array.isArray(a?.collections) && a.collections.some((c: Doc) => c?.publisher_domain === publisher)) return true;
    if (Array.isArray(a?.property_ids) && ours.some((p) => a.property_ids.includes(p.property_id))) return true;
    return Array.isArray(a?.property_tags) && ours.some((p) => Array.isArray(p.tags) && p.tags.some((t: string) => a.property_tags.includes(t)));
  });
}

/**
 * Revalidates a publisher's adagents.json live: find it (direct, or through its
 * authoritative_location), fall back to the manager its ads.txt names when the file is missing
 * (404, or an S3-style 403), validate it, and report what was found and how.
 */
export async function revalidateAdagents(domain: string, overrides: OriginOverrides, now = new Date()): Promise<{ result: RevalidationResult; manifest?: Doc }> {
  const checkedAt = now.toISOString();
  let found = await find(domain, overrides);
  let authority: Authority = 'domain';
  let manager: string | undefined;
  const missing = found.fetched.status === 404 || (found.fetched.status === 403 && /<Code>AccessDenied<\/Code>/.test(found.fetched.body.toString('utf8')));
  if (!found.doc && missing && found.method === 'direct') {
    const ads = await fetchDocument(`https://${domain}/ads.txt`, { overrides, maxBytes: 1024 * 1024, maxRedirects: 5, accept: 'text/plain' });
    const candidate = !ads.error && ads.status === 200 ? managerDomainOf(ads.body.toString('utf8')) : undefined;
    if (candidate && candidate === domain) found.warnings.push({ field: 'managerdomain', message: `Ignoring ads.txt managerdomain ${candidate} due to cycle detection` });
    else if (candidate) {
      const viaManager = await find(candidate, overrides);
      const managerCheck = viaManager.doc ? validateAdagents(viaManager.doc, now) : undefined;
      if (viaManager.doc && managerCheck!.valid && Array.isArray(viaManager.doc.authorized_agents)) {
        if (!scopesPublisher(viaManager.doc, domain)) {
          found = { ...found, errors: [err('managerdomain_scope', `Manager domain ${candidate} must explicitly scope authorization to publisher ${domain}`)] };
        } else {
          found = {
            ...viaManager,
            method: 'ads_txt_manager',
            warnings: [...viaManager.warnings, { field: 'managerdomain', message: `No directly usable adagents.json at https://${domain}/.well-known/adagents.json; used ads.txt managerdomain ${candidate}` }],
          };
          authority = 'adagents_authoritative';
          manager = candidate;
        }
      } else {
        found.warnings.push(...viaManager.warnings, ...(managerCheck?.warnings ?? []));
      }
    }
  }
  const validation = found.doc ? validateAdagents(found.doc, now) : { valid: false, errors: [], warnings: [] };
  const errors = [...found.errors, ...validation.errors];
  const warnings = [...found.warnings, ...validation.warnings];
  const doc = found.doc;
  const valid = errors.length === 0 && !!doc && Array.isArray(doc.authorized_agents);
  const result: RevalidationResult = {
    domain,
    adagents_valid: valid,
    checked_at: checkedAt,
    ...(valid ? {} : { error: errors[0]?.message ?? 'Invalid adagents.json' }),
    issues: { errors, warnings },
    properties_count: Array.isArray(doc?.properties) ? doc!.properties.length : 0,
    authorized_agents_count: Array.isArray(doc?.authorized_agents) ? doc!.authorized_agents.length : 0,
    ...(found.fetched.status ? { status_code: found.fetched.status } : {}),
    ...(found.fetched.status ? { response_bytes: found.fetched.body.length } : {}),
    resolved_url: found.fetched.url,
    discovery_method: found.method,
    authority,
    ...(manager ? { manager_domain: manager } : {}),
  };
  return valid ? { result, manifest: { authorized_agents: doc!.authorized_agents, properties: doc!.properties ?? [] } } : { result };
}
