import { html } from 'htm/preact';

/** An error message from a failed call, and the input it belongs to (its `extensions.field`). */
export function failureOf(err: unknown): { message: string; field?: string } {
  const field = (err as { field?: unknown } | null)?.field;
  return { message: err instanceof Error ? err.message : String(err), ...(typeof field === 'string' ? { field } : {}) };
}

export const when = (iso: string) => html`<time datetime=${iso}>${iso.replace('T', ' ').slice(0, 16)} UTC</time>`;
