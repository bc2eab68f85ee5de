import { AppError } from '../../shared/errors';

/**
 * The measurement terms this seller can stand behind: which maturation windows it reconciles
 * billing against, the tightest variance between counts it accepts, and the makegood remedies it
 * offers. A product may carry its own (`measurement` in the catalog file); these apply otherwise.
 */
export interface MeasurementPolicy {
  readonly windows: readonly string[];
  readonly min_variance_percent: number;
  readonly remedies: readonly string[];
}

export const DEFAULT_MEASUREMENT: MeasurementPolicy = { windows: ['live', 'c3', 'c7'], min_variance_percent: 5, remedies: ['additional_delivery', 'credit'] };

/** Buyer-proposed `measurement_terms`, checked against the policy; unworkable ones are TERMS_REJECTED with the reason. */
export function checkMeasurementTerms(policy: MeasurementPolicy, terms: unknown, field: string): void {
  if (terms === undefined) return;
  if (typeof terms !== 'object' || terms === null || Array.isArray(terms)) throw new AppError('VALIDATION_ERROR', 'measurement_terms must be an object', field);
  const t = terms as { billing_measurement?: { measurement_window?: unknown; max_variance_percent?: unknown }; makegood_policy?: { available_remedies?: unknown } };
  const reject = (why: string, at: string, details: Record<string, unknown>) => {
    throw new AppError('TERMS_REJECTED', `measurement_terms rejected: ${why}`, `${field}.${at}`, details);
  };
  const b = t.billing_measurement;
  if (b?.measurement_window !== undefined && !policy.windows.includes(String(b.measurement_window))) {
    reject(`measurement window ${String(b.measurement_window)} is not one this seller reconciles against (${policy.windows.join(', ')})`, 'billing_measurement.measurement_window', { accepted_values: policy.windows });
  }
  if (typeof b?.max_variance_percent === 'number' && b.max_variance_percent < policy.min_variance_percent) {
    reject(`a variance of ${b.max_variance_percent}% between counts is tighter than this seller accepts (at least ${policy.min_variance_percent}%)`, 'billing_measurement.max_variance_percent', { minimum: policy.min_variance_percent });
  }
  const remedies = t.makegood_policy?.available_remedies;
  if (Array.isArray(remedies) && !remedies.some((r) => policy.remedies.includes(String(r)))) {
    reject(`none of the proposed remedies is one this seller offers (${policy.remedies.join(', ')})`, 'makegood_policy.available_remedies', { accepted_values: policy.remedies });
  }
}
