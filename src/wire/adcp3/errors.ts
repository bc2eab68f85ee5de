import { retryAfterOf, type AppError, type ErrorCode } from '../../shared/errors';
import { isObject } from '../../shared/objects';

/** AdCP's `core/error.json`: what a buyer's agent reads to decide whether and how to retry. */
export interface AdcpError {
  code: string;
  message: string;
  recovery: 'transient' | 'correctable' | 'terminal';
  field?: string;
  details?: Record<string, unknown>;
  retry_after?: number;
}

/** Our codes by their 3.0 names, where the two vocabularies differ. */
const CODE_3: Partial<Record<ErrorCode, string>> = {
  UNAUTHENTICATED: 'AUTH_REQUIRED',
  FORBIDDEN: 'PERMISSION_DENIED',
  TASK_NOT_FOUND: 'REFERENCE_NOT_FOUND',
  NOT_FOUND: 'REFERENCE_NOT_FOUND',
  UNAVAILABLE: 'SERVICE_UNAVAILABLE',
  PAYLOAD_TOO_LARGE: 'INVALID_REQUEST',
  RESPONSE_TOO_LARGE: 'INVALID_REQUEST',
  UNSUPPORTED_MEDIA_TYPE: 'INVALID_REQUEST',
};

/** Recovery per 3.0 code (the enum's metadata); anything else a buyer must fix before retrying. */
const RECOVERY: Readonly<Record<string, AdcpError['recovery']>> = {
  RATE_LIMITED: 'transient',
  SERVICE_UNAVAILABLE: 'transient',
  CONFLICT: 'transient',
  ACCOUNT_NOT_FOUND: 'terminal',
  ACCOUNT_PAYMENT_REQUIRED: 'terminal',
  ACCOUNT_SUSPENDED: 'terminal',
  BUDGET_EXHAUSTED: 'terminal',
  GOVERNANCE_UNAVAILABLE: 'transient',
  CAMPAIGN_SUSPENDED: 'transient',
};

/**
 * Facts the domain gives for the codecs to choose codes and fields by (which resource or action,
 * whether a credential was presented, every failing field), not details of 3.0's error.
 */
const INTERNAL_DETAILS = new Set(['resource', 'action', 'retry_after', 'recovery', 'issues', 'credential']);

const recoveryOf = (v: unknown): AdcpError['recovery'] | undefined => (v === 'transient' || v === 'correctable' || v === 'terminal' ? v : undefined);

/**
 * One AppError as 3.0's error object. Field paths are given as the request named them: the
 * spec's `updates.` wrapper, which 3.0 requests do not have, is dropped for them.
 */
export function adcpError(err: AppError, options: { fieldPrefixToDrop?: string } = {}): AdcpError | { code: string; message: string } {
  // A conflict says no more than that: no field, no hint of what the key first carried (AdCP's
  // stolen-key defence; its recovery is fixed by the code).
  if (err.code === 'IDEMPOTENCY_CONFLICT') return { code: err.code, message: 'idempotency_key was already used with a different payload' };
  let code = CODE_3[err.code] ?? err.code;
  // The domain says which resource was missing or which action was refused; 3.0 has a code for each.
  if (err.code === 'NOT_FOUND' && err.details?.resource === 'package') code = 'PACKAGE_NOT_FOUND';
  if (err.code === 'INVALID_STATE' && err.details?.action === 'cancel') code = 'NOT_CANCELLABLE';
  const prefix = options.fieldPrefixToDrop;
  const field = err.field && prefix && err.field.startsWith(prefix) ? err.field.slice(prefix.length) : err.field;
  const details = err.details && Object.fromEntries(Object.entries(err.details).filter(([k]) => !INTERNAL_DETAILS.has(k)));
  return {
    code,
    message: err.message,
    // The code's usual recovery, unless this error names the buyer's fix (an account to sync first).
    recovery: recoveryOf(err.details?.recovery) ?? RECOVERY[code] ?? 'correctable',
    ...(field ? { field } : {}),
    ...(details && Object.keys(details).length ? { details } : {}),
    ...(code === 'SERVICE_UNAVAILABLE' || code === 'RATE_LIMITED' ? { retry_after: retryAfterOf(err) } : {}),
  };
}

/**
 * The 3.0 error for a failed task request. An update sent in 3.0's shape (no `updates {…}`) has
 * its fields named as it sent them, without the spec's `updates.` wrapper the domain reports.
 */
export function adcpErrorFor(task: string, request: unknown, err: AppError): ReturnType<typeof adcpError> {
  const specShapedUpdate = isObject(request) && isObject(request.updates);
  return adcpError(err, { fieldPrefixToDrop: task === 'update_media_buy' && !specShapedUpdate ? 'updates.' : undefined });
}
