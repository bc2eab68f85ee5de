import { html } from 'htm/preact';

/** Errors of one form by input name ("form": not about one input). */
export type FormErrors = Record<string, string>;

/** The attributes that tie an input to its error: aria-invalid, and aria-describedby its message. */
export function describedBy(id: string, errors: FormErrors, name: string) {
  return { id, 'aria-invalid': errors[name] ? 'true' : undefined, 'aria-describedby': errors[name] ? `${id}-error` : undefined };
}

/** The message under an input (its id `<input id>-error`), when it has one. */
export function FieldError({ id, errors, name }: { id: string; errors: FormErrors; name: string }) {
  return errors[name] ? html`<p id=${`${id}-error`} class="error" role="alert">${errors[name]}</p>` : null;
}

export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
