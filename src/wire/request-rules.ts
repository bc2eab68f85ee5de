type Obj = Record<string, unknown>;

/**
 * What a release asks of a request beyond the task's own schema (the answers are its codec's,
 * `answer-codec.ts`). The bindings that negotiate a release (MCP, A2A, REST with a version) apply
 * its rules before the task runs; nothing in a task knows which release asked.
 */
export interface ReleaseRequestRules {
  /** Reads whose `idempotency_key` is honoured with keyed replay (same key, same answer). */
  readonly keyedReads: ReadonlySet<string>;
  /** Refuses (AppError) a request this release's schema rules out for `tool`. */
  check(tool: string, args: Obj): void;
}

/** AdCP 3.0: a read's idempotency_key is ignored, and the task's own schema is the whole rule. */
export const requestRules30: ReleaseRequestRules = { keyedReads: new Set(), check: () => {} };
