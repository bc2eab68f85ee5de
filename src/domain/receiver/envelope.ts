/** AdCP task statuses a webhook's top-level `status` may carry (never a media-buy lifecycle value). */
export const TASK_STATUSES: ReadonlySet<string> = new Set(['submitted', 'working', 'input-required', 'completed', 'canceled', 'failed', 'rejected', 'auth-required', 'unknown']);
const A2A_FINAL: ReadonlySet<string> = new Set(['completed', 'failed', 'canceled', 'rejected']);

export type EnvelopeFormat = 'mcp' | 'a2a';

/** Spec §6 rule 3: a string `status` with a `task_id` is MCP-style; `status.state` is A2A. */
export function detectFormat(payload: unknown): EnvelopeFormat | undefined {
  if (!payload || typeof payload !== 'object') return undefined;
  const p = payload as { status?: unknown; task_id?: unknown };
  if (typeof p.status === 'string' && typeof p.task_id === 'string') return 'mcp';
  if (p.status && typeof p.status === 'object' && typeof (p.status as { state?: unknown }).state === 'string') return 'a2a';
  return undefined;
}

type Part = { kind?: string; data?: unknown };
const dataParts = (parts: unknown): unknown[] => (Array.isArray(parts) ? (parts as Part[]).filter((p) => p?.kind === 'data').map((p) => p.data) : []);

/**
 * The AdCP data a webhook carries (spec §6 rule 3): MCP-style in `result`; A2A final states in
 * the last data part of `artifacts[0].parts`, interim states in the first data part of
 * `status.message.parts`. Null when there is none.
 */
export function extractData(payload: Record<string, any>, format = detectFormat(payload)): unknown {
  if (format === 'mcp') return payload.result ?? null;
  if (format === 'a2a') {
    if (A2A_FINAL.has(payload.status.state)) return dataParts(payload.artifacts?.[0]?.parts).at(-1) ?? null;
    return dataParts(payload.status.message?.parts)[0] ?? null;
  }
  return null;
}

export type EnvelopeError = 'missing_envelope_fields' | 'missing_idempotency_key' | 'invalid_envelope_status';

/** Checks an MCP-style envelope before it is deduplicated and applied; undefined when it is fine. */
export function envelopeError(payload: unknown): EnvelopeError | undefined {
  if (!payload || typeof payload !== 'object' || Array.isArray(payload)) return 'missing_envelope_fields';
  const p = payload as Record<string, unknown>;
  if (typeof p.task_id !== 'string' || typeof p.status !== 'string' || typeof p.timestamp !== 'string' || typeof p.task_type !== 'string') {
    return 'missing_envelope_fields';
  }
  if (typeof p.idempotency_key !== 'string' || !/^[A-Za-z0-9_.:-]{16,255}$/.test(p.idempotency_key)) return 'missing_idempotency_key';
  if (!TASK_STATUSES.has(p.status)) return 'invalid_envelope_status';
  return undefined;
}
