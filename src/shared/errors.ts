/**
 * Domain and application errors carry a stable code and, where one input field is at fault, a
 * field path such as `packages[0].budget`. Each binding maps them once (REST, GraphQL, MCP);
 * anything that is not an AppError is masked as INTERNAL_ERROR and logged.
 */
export type ErrorCode =
  | 'INVALID_REQUEST'
  | 'VALIDATION_ERROR'
  | 'PRODUCT_NOT_FOUND'
  | 'MEDIA_BUY_NOT_FOUND'
  | 'CREATIVE_NOT_FOUND'
  | 'TASK_NOT_FOUND'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'INVALID_STATE'
  | 'IDEMPOTENCY_CONFLICT'
  | 'RATE_LIMITED'
  | 'PAYLOAD_TOO_LARGE'
  | 'RESPONSE_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'UNSUPPORTED_FEATURE'
  | 'ACCOUNT_NOT_FOUND'
  | 'TERMS_REJECTED'
  | 'PROPOSAL_EXPIRED'
  | 'VERSION_UNSUPPORTED'
  | 'PLAN_NOT_FOUND'
  | 'GOVERNANCE_DENIED'
  | 'GOVERNANCE_UNAVAILABLE'
  | 'UNAVAILABLE';

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly field?: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** HTTP status for each code, shared by the REST shim and GraphQL's `extensions.http`. */
export const httpStatusOf: Record<ErrorCode, number> = {
  // Spec §7: 400 invalid parameters (malformed, required field missing), 422 schema validation failure.
  INVALID_REQUEST: 400,
  VALIDATION_ERROR: 422,
  PRODUCT_NOT_FOUND: 404,
  MEDIA_BUY_NOT_FOUND: 404,
  CREATIVE_NOT_FOUND: 404,
  TASK_NOT_FOUND: 404,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  INVALID_STATE: 422,
  IDEMPOTENCY_CONFLICT: 409,
  RATE_LIMITED: 429,
  PAYLOAD_TOO_LARGE: 413,
  // The request is fine, but what it asks for is more than one answer may carry: ask for less.
  RESPONSE_TOO_LARGE: 422,
  UNSUPPORTED_MEDIA_TYPE: 415,
  UNSUPPORTED_FEATURE: 422,
  ACCOUNT_NOT_FOUND: 404,
  TERMS_REJECTED: 422,
  PROPOSAL_EXPIRED: 422,
  VERSION_UNSUPPORTED: 400,
  PLAN_NOT_FOUND: 404,
  // The buyer's own governance agent refused the commitment: the request was understood, not allowed.
  GOVERNANCE_DENIED: 403,
  // The buyer's own governance agent could not be consulted: the buy depends on it (424, not a
  // fault of this gateway; retry once the agent answers).
  GOVERNANCE_UNAVAILABLE: 424,
  UNAVAILABLE: 503,
};

/** Seconds a refused client should wait: what the refusal said (`details.retry_after`), else 30. */
export function retryAfterOf(err: AppError): number {
  const given = err.details?.retry_after;
  return typeof given === 'number' && given > 0 ? given : 30;
}

/**
 * What each code means, in words fixed here: what a record that outlives the call (a failed task's
 * message, which tasks_get, webhooks and the public task events carry) says of a failure, rather
 * than an error's own text, which may name other buyers' resources or, for an internal error,
 * anything at all (a database's message, a host, a path).
 */
const CODE_MESSAGES: Record<ErrorCode, string> = {
  INVALID_REQUEST: 'The request was invalid',
  VALIDATION_ERROR: 'The request did not pass validation',
  PRODUCT_NOT_FOUND: 'A product the request named was not found',
  MEDIA_BUY_NOT_FOUND: 'The media buy was not found',
  CREATIVE_NOT_FOUND: 'A creative the request named was not found',
  TASK_NOT_FOUND: 'The task was not found',
  UNAUTHENTICATED: 'Authentication is required',
  FORBIDDEN: 'The caller may not do this',
  NOT_FOUND: 'Something the request named was not found',
  CONFLICT: 'The request conflicts with an existing resource',
  INVALID_STATE: 'The resource is not in a state that allows this',
  IDEMPOTENCY_CONFLICT: 'idempotency_key was already used with a different payload',
  RATE_LIMITED: 'Too many requests',
  PAYLOAD_TOO_LARGE: 'The request was too large',
  RESPONSE_TOO_LARGE: 'The answer would be too large',
  UNSUPPORTED_MEDIA_TYPE: 'The request body type is not supported',
  UNSUPPORTED_FEATURE: 'The request asked for something not supported',
  ACCOUNT_NOT_FOUND: 'The account was not found',
  TERMS_REJECTED: 'The seller rejected the terms',
  PROPOSAL_EXPIRED: 'The proposal expired',
  VERSION_UNSUPPORTED: 'The AdCP version is not supported',
  PLAN_NOT_FOUND: 'The governance plan was not found',
  GOVERNANCE_DENIED: 'The buyer\'s governance agent denied it',
  GOVERNANCE_UNAVAILABLE: 'The buyer\'s governance agent could not be consulted',
  UNAVAILABLE: 'The service is temporarily unavailable',
};

/** A failure as a fixed, human-readable sentence and its code: an internal error is `INTERNAL_ERROR`, nothing more. */
export function failureMessage(err: unknown): string {
  return err instanceof AppError ? `${CODE_MESSAGES[err.code]} (${err.code})` : 'Internal error (INTERNAL_ERROR)';
}
