/**
 * The adagents.json validator, message for message as the reference registry reports them
 * (reference/registry.md §2.6): errors `{field, message, severity: "error"}` invalidate the file,
 * warnings `{field, message, suggestion?}` never do. Fields are paths such as
 * `authorized_agents[0].url`.
 */
export interface ValidationError {
  field: string;
  message: string;
  severity: 'error';
}
export interface ValidationWarning {
  field: string;
  message: string;
  suggestion?: string;
}
export interface Validation {
  valid: boolean;
  errors: ValidationError[];
  warnings: ValidationWarning[];
}

type Doc = Record<string, any>;
const isObject = (v: unknown): v is Doc => !!v && typeof v === 'object' && !Array.isArray(v);
const SELECTOR: Record<string, string> = {
  property_ids: 'property_ids',
  property_tags: 'property_tags',
  inline_properties: 'properties',
  publisher_properties: 'publisher_properties',
  signal_ids: 'signal_ids',
  signal_tags: 'signal_tags',
};
const STANDARD_CATEGORIES = ['purchase_intent', 'behavioral', 'ownership', 'lifestyle', 'financial', 'b2b', 'contextual', 'location', 'custom'];

export function validateAdagents(doc: unknown, now = new Date()): Validation {
  const errors: ValidationError[] = [];
  const warnings: ValidationWarning[] = [];
  const error = (field: string, message: string) => errors.push({ field, message, severity: 'error' });
  const warn = (field: string, message: string, suggestion?: string) => warnings.push({ field, message, ...(suggestion ? { suggestion } : {}) });
  const done = () => ({ valid: errors.length === 0, errors, warnings });

  if (!isObject(doc)) {
    error('root', 'adagents.json must be a valid JSON object');
    return done();
  }
  if (!doc.authorized_agents) {
    error('authorized_agents', 'authorized_agents field is required');
    return done();
  }
  if (!Array.isArray(doc.authorized_agents)) {
    error('authorized_agents', 'authorized_agents must be an array');
    return done();
  }

  // Top-level structure.
  if (doc.$schema !== undefined && typeof doc.$schema !== 'string') error('$schema', '$schema must be a string');
  if (doc.$schema === undefined) warn('$schema', 'Consider adding $schema field for validation', 'Add "$schema": "https://adcontextprotocol.org/schemas/v3/adagents.json"');
  if (doc.last_updated === undefined) warn('last_updated', 'Consider adding last_updated timestamp', `Add "last_updated": "${now.toISOString()}"`);
  else if (typeof doc.last_updated !== 'string') {
    if (doc.last_updated) error('last_updated', 'last_updated must be an ISO 8601 timestamp string');
  } else if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/.test(doc.last_updated)) {
    warn('last_updated', 'last_updated should be in ISO 8601 format (YYYY-MM-DDTHH:mm:ssZ)', 'Use new Date().toISOString() format');
  }
  const formats: Doc[] = [];
  if (doc.formats !== undefined) {
    if (!Array.isArray(doc.formats)) error('formats', 'formats must be an array');
    else
      doc.formats.forEach((f: unknown, i: number) => {
        if (!isObject(f)) return error(`formats[${i}]`, 'Each format must be an object');
        formats.push(f);
        if (f.capability_id !== undefined) error(`formats[${i}].capability_id`, 'Use format_option_id for publisher format catalog entries; capability_id is not valid here');
        if (isObject(f.reference_renderer)) {
          if (doc.catalog_etag === undefined) error('catalog_etag', 'catalog_etag is required when a format declares reference_renderer');
          if (doc.catalog_role !== 'community_format_registry') error('catalog_role', 'catalog_role must be community_format_registry when a format declares reference_renderer');
          if (f.reference_renderer.format_revision !== f.format_revision) error(`formats[${i}].reference_renderer.format_revision`, 'reference_renderer.format_revision must equal the enclosing format_revision');
        }
      });
  }
  if (doc.catalog_etag !== undefined && typeof doc.catalog_etag !== 'string') error('catalog_etag', 'catalog_etag must be a string');
  const placements: Doc[] = [];
  if (doc.placements !== undefined) {
    if (!Array.isArray(doc.placements)) error('placements', 'placements must be an array');
    else
      doc.placements.forEach((p: unknown, i: number) => {
        const at = `placements[${i}]`;
        if (!isObject(p)) return error(at, 'Each placement must be an object');
        placements.push(p);
        if (typeof p.placement_id !== 'string') error(`${at}.placement_id`, 'placement_id is required and must be a string');
        if (typeof p.name !== 'string') error(`${at}.name`, 'name is required and must be a string');
        if (p.property_ids === undefined && p.property_tags === undefined) error(at, 'placement must include property_ids or property_tags');
        if (p.property_ids !== undefined && !Array.isArray(p.property_ids)) error(`${at}.property_ids`, 'property_ids must be an array');
        if (p.property_tags !== undefined && !Array.isArray(p.property_tags)) error(`${at}.property_tags`, 'property_tags must be an array');
      });
  }
  for (const [key, label] of [
    ['signal_tags', 'Signal'],
    ['placement_tags', 'Placement'],
  ] as const) {
    if (doc[key] === undefined) continue;
    if (!isObject(doc[key])) {
      error(key, `${key} must be an object mapping tag IDs to tag definitions`);
      continue;
    }
    for (const [id, def] of Object.entries(doc[key] as Doc)) {
      if (!isObject(def)) error(`${key}.${id}`, `Each ${label.toLowerCase()} tag must be an object with name and description`);
      else if (typeof def.name !== 'string') error(`${key}.${id}.name`, `${label} tag name is required and must be a string`);
    }
  }

  // Signals.
  const signals: Doc[] = [];
  if (doc.signals !== undefined) {
    if (!Array.isArray(doc.signals)) error('signals', 'signals must be an array');
    else doc.signals.forEach((s: unknown, i: number) => validateSignal(s, `signals[${i}]`, error, warn) && signals.push(s as Doc));
  }

  // Agents.
  doc.authorized_agents.forEach((a: unknown, i: number) => validateAgent(a, `authorized_agents[${i}]`, error));

  // Cross-references.
  const agents: Doc[] = doc.authorized_agents.filter(isObject);
  const seenUrls = new Set<string>();
  doc.authorized_agents.forEach((a: unknown, i: number) => {
    if (!isObject(a) || typeof a.url !== 'string') return;
    if (seenUrls.has(a.url)) warn(`authorized_agents[${i}].url`, 'Duplicate agent URL found');
    seenUrls.add(a.url);
  });
  const hasCatalog = formats.length > 0 || (Array.isArray(doc.properties) && doc.properties.length > 0) || placements.length > 0 || (Array.isArray(doc.collections) && doc.collections.length > 0) || signals.length > 0;
  if (agents.length === 0 && doc.authorized_agents.length === 0 && !hasCatalog) warn('authorized_agents', 'No authorized agents and no catalog content');
  const signalIds = new Set<string>();
  signals.forEach((s, i) => {
    if (typeof s.id !== 'string') return;
    if (signalIds.has(s.id)) warn(`signals[${i}].id`, `Duplicate signal ID: ${s.id}`);
    signalIds.add(s.id);
  });
  const definedSignalTags = new Set(isObject(doc.signal_tags) ? Object.keys(doc.signal_tags) : []);
  const usedSignalTags = new Set(signals.flatMap((s) => (Array.isArray(s.tags) ? s.tags.filter((t: unknown) => typeof t === 'string') : [])));
  for (const t of usedSignalTags) if (!definedSignalTags.has(t)) warn('signal_tags', `Signal tag "${t}" is used in signals but not defined in signal_tags`);
  const propertyIds = new Set((Array.isArray(doc.properties) ? doc.properties : []).map((p: Doc) => p?.property_id).filter((x: unknown) => typeof x === 'string'));
  const formatOptionIds = new Set<string>();
  formats.forEach((f, i) => {
    if (typeof f.format_option_id !== 'string') return warn(`formats[${i}].format_option_id`, 'Publisher catalog format is missing format_option_id');
    if (formatOptionIds.has(f.format_option_id)) warn(`formats[${i}].format_option_id`, `Duplicate format_option_id: ${f.format_option_id}`);
    formatOptionIds.add(f.format_option_id);
  });
  const definedPlacementTags = new Set(isObject(doc.placement_tags) ? Object.keys(doc.placement_tags) : []);
  const usedPlacementTags = new Set<string>();
  placements.forEach((p, i) => {
    const at = `placements[${i}]`;
    if (Array.isArray(p.property_ids)) for (const id of p.property_ids) if (typeof id === 'string' && !propertyIds.has(id)) warn(`${at}.property_ids`, `Placement property_id "${id}" not found in properties`);
    if (Array.isArray(p.tags)) for (const t of p.tags) if (typeof t === 'string') usedPlacementTags.add(t);
    const listed = new Set<string>();
    if (Array.isArray(p.format_options)) {
      p.format_options.forEach((o: Doc, j: number) => {
        if (!isObject(o)) return;
        if (o.capability_id !== undefined) error(`${at}.format_options[${j}].capability_id`, 'Use format_option_id for placement format references; capability_id is not valid here');
        if (typeof o.format_option_id === 'string') {
          listed.add(o.format_option_id);
          if (o.format_kind === undefined && !formatOptionIds.has(o.format_option_id)) error(`${at}.format_options[${j}].format_option_id`, `Placement references unknown format_option_id "${o.format_option_id}"`);
        }
      });
    }
    const routes = Array.isArray(p.preview_provider?.routes) ? (p.preview_provider.routes as Doc[]) : [];
    const routed = new Set<string>();
    routes.forEach((r, k) => {
      if (!isObject(r) || typeof r.format_option_id !== 'string') return;
      const f = `${at}.preview_provider.routes[${k}].format_option_id`;
      if (!listed.has(r.format_option_id)) error(f, `Preview provider route references format_option_id "${r.format_option_id}" that is not listed on this placement`);
      if (routed.has(r.format_option_id)) error(f, `Duplicate preview provider route for format_option_id "${r.format_option_id}"`);
      routed.add(r.format_option_id);
    });
  });
  for (const t of usedPlacementTags) if (!definedPlacementTags.has(t)) warn('placement_tags', `Placement tag "${t}" is used in placements but not defined in placement_tags`);
  agents.forEach((a) => {
    const i = doc.authorized_agents.indexOf(a);
    if (Array.isArray(a.signal_ids)) for (const id of a.signal_ids) if (typeof id === 'string' && !signalIds.has(id)) warn(`authorized_agents[${i}].signal_ids`, `Signal ID "${id}" not found in signals catalog`);
    if (Array.isArray(a.signal_tags)) for (const t of a.signal_tags) if (typeof t === 'string' && !usedSignalTags.has(t) && !definedSignalTags.has(t)) warn(`authorized_agents[${i}].signal_tags`, `Signal tag "${t}" not found in any signal or signal_tags`);
    if (Array.isArray(a.placement_tags)) for (const t of a.placement_tags) if (typeof t === 'string' && !usedPlacementTags.has(t) && !definedPlacementTags.has(t)) warn(`authorized_agents[${i}].placement_tags`, `Placement tag "${t}" not found in any placement or placement_tags`);
  });
  return done();
}

function validateAgent(a: unknown, at: string, error: (f: string, m: string) => void): void {
  if (!isObject(a)) return error(at, 'Each agent must be an object');
  if (a.url === undefined || a.url === null || a.url === '') error(`${at}.url`, 'url field is required');
  else if (typeof a.url !== 'string') error(`${at}.url`, 'url must be a string');
  else {
    let u: URL | undefined;
    try {
      u = new URL(a.url);
    } catch {
      error(`${at}.url`, 'url must be a valid URL');
    }
    if (u && u.protocol !== 'https:') error(`${at}.url`, 'Agent URL must use HTTPS');
  }
  if (!a.authorized_for) error(`${at}.authorized_for`, 'authorized_for field is required');
  else if (typeof a.authorized_for !== 'string') error(`${at}.authorized_for`, 'authorized_for must be a string');
  else if (a.authorized_for.length > 500) error(`${at}.authorized_for`, 'authorized_for must be 500 characters or less');
  for (const k of ['property_ids', 'property_tags', 'signal_ids', 'signal_tags', 'placement_ids', 'placement_tags']) {
    if (a[k] !== undefined && !Array.isArray(a[k])) error(`${at}.${k}`, `${k} must be an array`);
  }
  if (a.countries !== undefined) {
    if (!Array.isArray(a.countries)) error(`${at}.countries`, 'countries must be an array');
    else a.countries.forEach((c: unknown, j: number) => typeof c === 'string' && /^[A-Z]{2}$/.test(c) ? undefined : error(`${at}.countries[${j}]`, 'countries entries must be ISO 3166-1 alpha-2 codes'));
  }
  if (a.delegation_type !== undefined && !['direct', 'delegated', 'ad_network'].includes(a.delegation_type)) error(`${at}.delegation_type`, 'delegation_type must be one of: direct, delegated, ad_network');
  if (a.exclusive !== undefined && typeof a.exclusive !== 'boolean') error(`${at}.exclusive`, 'exclusive must be a boolean');
  for (const k of ['effective_from', 'effective_until']) {
    if (a[k] !== undefined && (typeof a[k] !== 'string' || Number.isNaN(Date.parse(a[k])))) error(`${at}.${k}`, `${k} must be a valid ISO 8601 date-time string`);
  }
  if (typeof a.effective_from === 'string' && typeof a.effective_until === 'string' && Date.parse(a.effective_until) < Date.parse(a.effective_from)) {
    error(`${at}.effective_until`, 'effective_until must be later than or equal to effective_from');
  }
  if (a.signing_keys !== undefined) {
    if (!Array.isArray(a.signing_keys)) error(`${at}.signing_keys`, 'signing_keys must be an array');
    else
      a.signing_keys.forEach((k: unknown, j: number) => {
        if (!isObject(k)) return error(`${at}.signing_keys[${j}]`, 'signing_keys entries must be objects');
        if (!k.kid) error(`${at}.signing_keys[${j}].kid`, 'signing key kid is required');
        if (!k.kty) error(`${at}.signing_keys[${j}].kty`, 'signing key kty is required');
      });
  }
  if (a.authorization_type === undefined) {
    error(`${at}.authorization_type`, 'missing required field `authorization_type` (one of `property_ids`, `property_tags`, `inline_properties`, `publisher_properties`, `signal_ids`, `signal_tags`)');
  } else if (!Object.hasOwn(SELECTOR, a.authorization_type)) {
    error(`${at}.authorization_type`, 'authorization_type must be one of: property_ids, property_tags, inline_properties, publisher_properties, signal_ids, signal_tags');
  } else {
    const selector = SELECTOR[a.authorization_type]!;
    if (!Array.isArray(a[selector]) || a[selector].length === 0) error(`${at}.${selector}`, `authorization_type is "${a.authorization_type}" but \`${selector}\` is missing or empty`);
  }
}

function validateSignal(s: unknown, at: string, error: (f: string, m: string) => void, warn: (f: string, m: string, s?: string) => void): boolean {
  if (!isObject(s)) {
    error(at, 'Each signal must be an object');
    return false;
  }
  if (s.id === undefined) error(`${at}.id`, 'Signal id is required');
  else if (typeof s.id !== 'string') error(`${at}.id`, 'Signal id must be a string');
  else if (!/^[A-Za-z0-9_-]+$/.test(s.id)) error(`${at}.id`, 'Signal id must contain only alphanumeric characters, underscores, and hyphens');
  if (s.name === undefined) error(`${at}.name`, 'Signal name is required');
  else if (typeof s.name !== 'string') error(`${at}.name`, 'Signal name must be a string');
  if (s.value_type === undefined) error(`${at}.value_type`, 'Signal value_type is required');
  else if (!['binary', 'categorical', 'numeric'].includes(s.value_type)) error(`${at}.value_type`, 'Signal value_type must be one of: binary, categorical, numeric');
  if (s.value_type === 'categorical') {
    if (s.allowed_values === undefined) warn(`${at}.allowed_values`, 'Categorical signal should define allowed_values', 'Add an allowed_values array listing the categories');
    else if (!Array.isArray(s.allowed_values)) error(`${at}.allowed_values`, 'allowed_values must be an array');
    else if (s.allowed_values.length === 0) warn(`${at}.allowed_values`, 'Categorical signal has empty allowed_values array', 'List at least one allowed value');
  }
  if (s.value_type === 'numeric' && s.range !== undefined) {
    if (!isObject(s.range)) error(`${at}.range`, 'range must be an object with min and max');
    else {
      if (typeof s.range.min !== 'number') error(`${at}.range.min`, 'range.min must be a number');
      if (typeof s.range.max !== 'number') error(`${at}.range.max`, 'range.max must be a number');
      if (typeof s.range.min === 'number' && typeof s.range.max === 'number' && s.range.min > s.range.max) error(`${at}.range`, 'range.min cannot be greater than range.max');
    }
  }
  if (s.category !== undefined) {
    if (typeof s.category !== 'string') error(`${at}.category`, 'Signal category must be a string');
    else if (!STANDARD_CATEGORIES.includes(s.category)) warn(`${at}.category`, `Signal category "${s.category}" is not a standard category`, `Consider using one of: ${STANDARD_CATEGORIES.join(', ')}`);
  }
  if (s.tags !== undefined) {
    if (!Array.isArray(s.tags)) error(`${at}.tags`, 'Signal tags must be an array');
    else
      s.tags.forEach((t: unknown, j: number) => {
        if (typeof t !== 'string') error(`${at}.tags[${j}]`, 'Each tag must be a string');
        else if (!/^[a-z0-9_-]+$/.test(t)) error(`${at}.tags[${j}]`, 'Tags must contain only lowercase alphanumeric characters, underscores, and hyphens');
      });
  }
  return true;
}
