/**
 * What this seller checks of a creative's assets, per asset of its format, as AdCP 3.0 states it
 * (core/requirements/*-asset-requirements.json). One derivation serves both sides: list_creative_formats
 * shows these requirements (answers.ts `format3`) and sync_creatives enforces exactly them
 * (application/tasks/creative-tasks `checkAssets`), so a buyer can learn from the format what a
 * sync would refuse.
 *
 * Derived from the catalog's format: an image or video asset's `schema` width and height (exact
 * pixel sizes: min = max), the format's `requirements.min_duration_ms` / `max_duration_ms` for its
 * video assets, a single `requirements.catalog_types` entry for its catalog asset, and http(s)
 * for URL assets (a catalog asset naming another type is refused; one naming none is taken as the
 * format's). A format seeded with 3.0 per-asset `requirements` (a sandbox fixture) keeps the
 * ones this seller checks (dimensions, durations). What the catalog states but the seller cannot
 * check is left out: `file_types` and `max_file_size_kb` (the seller never fetches an asset's file).
 */
export interface AssetRequirements {
  min_width?: number;
  max_width?: number;
  min_height?: number;
  max_height?: number;
  min_duration_ms?: number;
  max_duration_ms?: number;
  /** URL assets: the schemes accepted. */
  protocols?: string[];
  /** Catalog assets: the catalog type the format renders. */
  catalog_type?: string;
}

/** A format as the catalog (or a sandbox seed) keeps it: only what requirements are read from. */
export interface FormatLike {
  readonly format_id: { readonly id: string };
  readonly requirements?: Readonly<Record<string, unknown>>;
  readonly assets?: readonly AssetLike[];
}
export interface AssetLike {
  readonly asset_id: string;
  readonly asset_type: string;
  readonly schema?: unknown;
  readonly requirements?: unknown;
}

/** AdCP 3.0's catalog types (enums/catalog-type.json): a requirement names one of these or none. */
const CATALOG_TYPES = new Set(['offering', 'product', 'inventory', 'store', 'promotion', 'hotel', 'flight', 'job', 'vehicle', 'real_estate', 'education', 'destination', 'app']);

const positiveInt = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : undefined);
const record = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** The requirements this seller states and checks for one asset of a format (empty: none). */
export function assetRequirements(format: FormatLike, asset: AssetLike): AssetRequirements {
  const out: AssetRequirements = {};
  const schema = record(asset.schema);
  const seeded = record(asset.requirements);
  const formatReq = record(format.requirements);
  const set = (key: keyof AssetRequirements, value: number | undefined) => {
    if (value !== undefined) (out as Record<string, unknown>)[key] = value;
  };
  if (asset.asset_type === 'image' || asset.asset_type === 'video') {
    const width = positiveInt(schema.width);
    const height = positiveInt(schema.height);
    set('min_width', width ?? positiveInt(seeded.min_width));
    set('max_width', width ?? positiveInt(seeded.max_width));
    set('min_height', height ?? positiveInt(seeded.min_height));
    set('max_height', height ?? positiveInt(seeded.max_height));
  }
  if (asset.asset_type === 'video') {
    set('min_duration_ms', positiveInt(formatReq.min_duration_ms) ?? positiveInt(seeded.min_duration_ms));
    set('max_duration_ms', positiveInt(formatReq.max_duration_ms) ?? positiveInt(seeded.max_duration_ms));
  }
  if (asset.asset_type === 'url') out.protocols = ['https', 'http'];
  if (asset.asset_type === 'catalog') {
    const types = Array.isArray(formatReq.catalog_types) ? formatReq.catalog_types : [];
    if (types.length === 1 && typeof types[0] === 'string' && CATALOG_TYPES.has(types[0])) out.catalog_type = types[0];
  }
  return out;
}

export interface RequirementViolation {
  /** The asset's field at fault, relative to the asset (`width`, `duration_ms`, …). */
  field: string;
  message: string;
}

/**
 * What of one asset breaks its requirements. A requirement stated for a field the asset does not
 * give (a width, a duration) is broken too: the seller cannot accept what it cannot check.
 */
export function violations(req: AssetRequirements, value: unknown): RequirementViolation[] {
  const v = record(value);
  const out: RequirementViolation[] = [];
  const range = (field: string, label: string, unit: string, min: number | undefined, max: number | undefined) => {
    if (min === undefined && max === undefined) return;
    const n = v[field];
    const wanted = min === max ? `${min} ${unit}` : min === undefined ? `at most ${max} ${unit}` : max === undefined ? `at least ${min} ${unit}` : `${min}-${max} ${unit}`;
    if (typeof n !== 'number') out.push({ field, message: `is required: the format requires a ${label} of ${wanted}` });
    else if (min !== undefined && min === max && n !== min) out.push({ field, message: `${label} ${n} ${unit} is not the format's ${min} ${unit}` });
    else if (max !== undefined && n > max) out.push({ field, message: `${label} ${n} ${unit} exceeds the format's ${max} ${unit}` });
    else if (min !== undefined && n < min) out.push({ field, message: `${label} ${n} ${unit} is below the format's ${min} ${unit}` });
  };
  range('width', 'width', 'px', req.min_width, req.max_width);
  range('height', 'height', 'px', req.min_height, req.max_height);
  range('duration_ms', 'duration', 'ms', req.min_duration_ms, req.max_duration_ms);
  if (req.protocols && typeof v.url === 'string') {
    const scheme = URL.canParse(v.url) ? new URL(v.url).protocol.replace(/:$/, '') : undefined;
    if (!scheme || !req.protocols.includes(scheme)) out.push({ field: 'url', message: `must be an ${req.protocols.join(' or ')} URL` });
  }
  if (req.catalog_type !== undefined && v.type !== undefined && v.type !== req.catalog_type) {
    out.push({ field: 'type', message: `catalog type ${String(v.type)} is not the format's ${req.catalog_type}` });
  }
  return out;
}
