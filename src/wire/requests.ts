import { AppError } from '../shared/errors';
import { isObject } from '../shared/objects';

/**
 * Every binding accepts both request shapes: the spec's (`buyer_ref`, `brand_manifest`,
 * `updates {…}`, an `assignments` map) and AdCP 3.0's (`brand` + `account`, top-level `paused` /
 * `canceled` / `packages[]`, `assignments[]`, `creative_assignments`). This turns either into the
 * spec's shape, which is what the task schemas validate; a request already in that shape passes
 * through untouched. Fields of the other shape that have no meaning here are left in place (the
 * task schemas are open, as AdCP asks), never silently reinterpreted.
 */
export function canonicalRequest(task: string, raw: Record<string, unknown>): Record<string, unknown> {
  const decode = Object.hasOwn(decoders, task) ? decoders[task] : undefined;
  const req = withOperationId(raw);
  return decode ? decode(req) : req;
}

/**
 * 3.0 makes `push_notification_config.operation_id` optional; the spec's webhooks carry one. A
 * request that names none is keyed by its idempotency_key (the buyer's own handle on it).
 */
function withOperationId(req: Obj): Obj {
  const push = req.push_notification_config;
  if (!isObject(push) || push.operation_id !== undefined || typeof req.idempotency_key !== 'string') return req;
  return { ...req, push_notification_config: { ...push, operation_id: req.idempotency_key } };
}

type Obj = Record<string, unknown>;

/** AdCP 3.0 channel names for the catalog's (and back): the spec's `video` is 3.0's online video. */
export const CHANNEL_TO_ADCP3: Readonly<Record<string, string>> = { video: 'olv' };
const CHANNEL_FROM_ADCP3: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(CHANNEL_TO_ADCP3).map(([a, b]) => [b, a]));

/** 3.0's `brand` reference (or a bare URL string) as the spec's brand manifest. */
function brandManifestOf(raw: Obj): unknown {
  if (typeof raw.brand_manifest === 'string') return { url: raw.brand_manifest };
  if (raw.brand_manifest !== undefined) return raw.brand_manifest;
  const brand = raw.brand;
  if (isObject(brand) && typeof brand.domain === 'string' && /^[a-z0-9.-]+$/i.test(brand.domain)) {
    return { url: `https://${brand.domain.toLowerCase()}/`, brand };
  }
  return undefined;
}

/** A 3.0 package's `creative_assignments` as the spec's `creative_ids`. */
function creativeIdsOf(p: Obj): unknown {
  if (p.creative_ids !== undefined || !Array.isArray(p.creative_assignments)) return p.creative_ids;
  return p.creative_assignments.map((a) => (isObject(a) ? a.creative_id : a));
}

function withCreativeIds(p: unknown): unknown {
  if (!isObject(p)) return p;
  const ids = creativeIdsOf(p);
  return ids === undefined ? p : { ...p, creative_ids: ids };
}

const decoders: Readonly<Record<string, (raw: Obj) => Obj>> = {
  get_products(raw) {
    const filters = raw.filters;
    if (!isObject(filters) || !Array.isArray(filters.channels)) return raw;
    return { ...raw, filters: { ...filters, channels: filters.channels.map((c) => (typeof c === 'string' && Object.hasOwn(CHANNEL_FROM_ADCP3, c) ? CHANNEL_FROM_ADCP3[c] : c)) } };
  },

  create_media_buy(raw) {
    const out: Obj = { ...raw };
    const manifest = brandManifestOf(raw);
    if (manifest !== undefined) out.brand_manifest = manifest;
    // 3.0 dropped buyer_ref for seller-assigned ids keyed by idempotency_key: the key names the buy.
    if (out.buyer_ref === undefined && typeof raw.idempotency_key === 'string') out.buyer_ref = raw.idempotency_key;
    if (Array.isArray(raw.packages)) out.packages = raw.packages.map(withCreativeIds);
    return out;
  },

  update_media_buy(raw) {
    if (raw.updates !== undefined) return raw;
    const updates: Obj = {};
    if (raw.canceled === true) updates.status = 'cancel';
    else if (raw.paused === true) updates.status = 'pause';
    else if (raw.paused === false) updates.status = 'resume';
    if (typeof raw.cancellation_reason === 'string') updates.reason = raw.cancellation_reason;
    for (const k of ['end_time', 'push_notification_config', 'reporting_webhook'] as const) if (raw[k] !== undefined) updates[k] = raw[k];
    if (Array.isArray(raw.packages)) updates.packages = raw.packages.map(withCreativeIds);
    if (raw.start_time !== undefined) throw new AppError('UNSUPPORTED_FEATURE', 'a media buy\'s start_time cannot be changed once created', 'start_time');
    if (raw.new_packages !== undefined) throw new AppError('UNSUPPORTED_FEATURE', 'adding packages to an existing media buy is not supported', 'new_packages');
    return { ...raw, updates };
  },

  sync_creatives(raw) {
    if (!Array.isArray(raw.assignments)) return raw;
    // 3.0: [{creative_id, package_id}] pairs; the spec: {creative_id: [package_id…]}.
    const map: Record<string, string[]> = Object.create(null);
    raw.assignments.forEach((a, i) => {
      if (!isObject(a) || typeof a.creative_id !== 'string' || typeof a.package_id !== 'string') {
        throw new AppError('INVALID_REQUEST', 'each assignment needs a creative_id and a package_id', `assignments[${i}]`);
      }
      (map[a.creative_id] ??= []).push(a.package_id);
    });
    return { ...raw, assignments: map };
  },
};
