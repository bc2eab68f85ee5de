import type { AppError } from '../../shared/errors';
import { adcpErrorFor } from '../adcp3/errors';
import { mediaBuyStatus3, validActions } from '../adcp3/answers';

type Obj = Record<string, any>;

/**
 * AdCP 3.1's error object (`core/error.json` at 3.1.19), from the domain's AppError. The domain
 * keeps its own codes; 3.1's names are this file's. 3.1 starts from 3.0's (`adcp3/errors.ts`:
 * the same code names where the two vocabularies agree, fields named as the request named them)
 * and differs in:
 *
 * - the code enum: `AUTH_MISSING` (no credential presented) and `AUTH_INVALID` (one presented
 *   and refused) for 3.0's `AUTH_REQUIRED`; `PROPOSAL_NOT_FOUND` for an unknown proposal;
 *   `ACTION_NOT_ALLOWED` (details: `attempted_action`, `reason: wrong_status`, and
 *   `currently_available_actions` from the buy's 3.0 `valid_actions`) for pausing or
 *   resuming a buy whose status does not allow it yet, where 3.0 says INVALID_STATE (a buy in a
 *   terminal status stays INVALID_STATE, and cancelling one NOT_CANCELLABLE, as 3.1's
 *   storyboards expect);
 * - `recovery` on every error, by the code's `enumMetadata` (an idempotency conflict included,
 *   which 3.0 answers with no more than code and message);
 * - `issues[]` (RFC 6901 pointers) on validation errors, every failing field the check found,
 *   with `field` kept as `issues[0]`'s path, as 3.1 requires for pre-3.1 readers;
 * - `details` per `error-details/*.json` where one exists (version-unsupported, conflict,
 *   action-not-allowed, rate-limited with `retry_after` at the top).
 */
export interface AdcpError31 {
  code: string;
  message: string;
  recovery: 'transient' | 'correctable' | 'terminal';
  field?: string;
  issues?: { pointer: string; message: string; keyword: string }[];
  details?: Obj;
  retry_after?: number;
}

/** 3.1's recovery per code (`enums/error-code.json` enumMetadata) where it is not `correctable`. */
const RECOVERY_31: Readonly<Record<string, AdcpError31['recovery']>> = {
  RATE_LIMITED: 'transient',
  SERVICE_UNAVAILABLE: 'transient',
  CONFLICT: 'transient',
  IDEMPOTENCY_IN_FLIGHT: 'transient',
  GOVERNANCE_UNAVAILABLE: 'transient',
  CAMPAIGN_SUSPENDED: 'transient',
  STALE_RESPONSE: 'transient',
  AUTH_INVALID: 'terminal',
  CREDENTIAL_IN_ARGS: 'terminal',
  CONFIGURATION_ERROR: 'terminal',
  ACCOUNT_NOT_FOUND: 'terminal',
  ACCOUNT_PAYMENT_REQUIRED: 'terminal',
  ACCOUNT_SUSPENDED: 'terminal',
  BUDGET_EXHAUSTED: 'terminal',
  BILLING_OUT_OF_BAND: 'terminal',
  AGENT_SUSPENDED: 'terminal',
  AGENT_BLOCKED: 'terminal',
};

/** Buy statuses nothing leaves: acting on such a buy is INVALID_STATE in 3.1 as in 3.0. */
const TERMINAL = new Set(['canceled', 'completed', 'rejected']);

/** Status changes 3.1 names as `media-buy-valid-action` values. */
const STATUS_ACTIONS = new Set(['pause', 'resume']);

/** `packages[0].budget` as an RFC 6901 pointer, `/packages/0/budget`. */
export function pointerOf(field: string): string {
  const segments = field.match(/[^.[\]]+/g) ?? [];
  return segments.map((s) => `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
}

/** The 3.1 code for an error whose 3.0 code is `code3`, where 3.1 names the situation more precisely. */
function code31(err: AppError, code3: string): string {
  if (err.code === 'UNAUTHENTICATED') return err.details?.credential === 'missing' ? 'AUTH_MISSING' : 'AUTH_INVALID';
  if (err.code === 'NOT_FOUND' && err.details?.resource === 'proposal') return 'PROPOSAL_NOT_FOUND';
  if (err.details?.reason === 'credential_in_args') return 'CREDENTIAL_IN_ARGS';
  if (err.code === 'INVALID_STATE' && STATUS_ACTIONS.has(String(err.details?.action)) && !TERMINAL.has(String(err.details?.current_status))) return 'ACTION_NOT_ALLOWED';
  return code3;
}

/** The prefix 3.0 drops from an update's fields (its requests have no `updates {…}` wrapper). */
function fieldAsSent(field: string, shown: string | undefined, err: AppError): string {
  return err.field && shown && err.field !== shown && field.startsWith('updates.') ? field.slice('updates.'.length) : field;
}

/** The error of a failed 3.1 call (the request as sent names the fields). */
export function adcpError31(task: string, request: unknown, err: AppError): AdcpError31 {
  const base = adcpErrorFor(task, request, err) as Partial<AdcpError31> & { code: string; message: string };
  const code = code31(err, base.code);
  const stated = err.details?.recovery;
  const recovery = stated === 'transient' || stated === 'correctable' || stated === 'terminal' ? stated : (RECOVERY_31[code] ?? 'correctable');
  const given = Array.isArray(err.details?.issues) ? (err.details.issues as { field?: string; message: string; keyword?: string }[]) : [];
  const issues =
    code === 'VALIDATION_ERROR' || code === 'INVALID_REQUEST'
      ? given.length
        ? given.map((i) => ({ pointer: pointerOf(fieldAsSent(i.field ?? '', base.field, err)), message: i.message, keyword: i.keyword ?? 'custom' }))
        : base.field
          ? // One field the agent's own rules refused (not its input schema): a missing one is `required`.
            [{ pointer: pointerOf(base.field), message: err.message, keyword: code === 'INVALID_REQUEST' && / is required/.test(err.message) ? 'required' : 'custom' }]
          : []
      : [];
  const details: Obj = { ...(base.details ?? {}) };
  delete details.issues;
  delete details.credential;
  if (code === 'ACTION_NOT_ALLOWED') {
    // What the buy offers instead, as its valid_actions tell it (every change here is self-serve).
    const status = mediaBuyStatus3(String(err.details!.current_status), {}, new Date(0));
    const currently = validActions(status).map((action) => ({ action, mode: 'self_serve' }));
    Object.assign(details, { attempted_action: err.details!.action, reason: 'wrong_status', currently_available_actions: currently });
  }
  if (code === 'CONFLICT' && typeof err.details?.streamId === 'string') {
    // error-details/conflict.json, without the event store's stream names.
    delete details.streamId;
    delete details.expected;
    delete details.actual;
    Object.assign(details, { expected_version: String(err.details.expected), current_version: err.details.actual });
  }
  return {
    code,
    message: base.message,
    recovery,
    ...(base.field ? { field: base.field } : {}),
    ...(issues.length ? { issues } : {}),
    ...(Object.keys(details).length ? { details } : {}),
    ...(base.retry_after !== undefined ? { retry_after: base.retry_after } : {}),
  };
}
