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
