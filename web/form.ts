import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { GraphQLFailure } from './api.js';

/** Errors of one form by input name ("form": not about one input). */
export type FormErrors = Record<string, string>;

export const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The attributes that tie an input to its error: aria-invalid, and aria-describedby its message. */
export function describedBy(id: string, errors: FormErrors, name: string) {
  return { id, 'aria-invalid': errors[name] ? 'true' : undefined, 'aria-describedby': errors[name] ? `${id}-error` : undefined };
}

/** The message under an input (its id `<input id>-error`), when it has one. */
export function FieldError({ id, errors, name }: { id: string; errors: FormErrors; name: string }) {
  return errors[name] ? html`<p id=${`${id}-error`} class="error" role="alert">${errors[name]}</p>` : null;
}

/** A labelled input (the child, given `describedBy(id, errors, name)`) with its error under it. */
export function Field({ id, label, errors, name, children }: { id: string; label: string; errors: FormErrors; name: string; children: unknown }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children}
    <${FieldError} id=${id} errors=${errors} name=${name} />
  </div>`;
}

/**
 * One form's state: its values, its errors by input, whether it is sending and what it last did.
 * `onSubmit(send, inputOf)` makes the submit handler: `send` runs the mutation and may answer a
 * message to show; a failure shows at the input `inputOf` names for the error's `extensions.field`,
 * else above the form.
 */
export function useForm<V extends Record<string, string>>(initial: V | (() => V)) {
  const [values, setValues] = useState<V>(initial);
  const [errors, setErrors] = useState<FormErrors>({});
  const [done, setDone] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const set = (name: keyof V & string) => (e: Event) => setValues((v) => ({ ...v, [name]: (e.target as HTMLInputElement).value }));
  const onSubmit =
    (send: () => Promise<string | void>, inputOf: (field: string | undefined) => string | undefined = () => undefined) =>
    async (e: Event) => {
      e.preventDefault();
      if (busy) return;
      setBusy(true);
      setErrors({});
      setDone(undefined);
      try {
        const message = await send();
        if (message) setDone(message);
      } catch (err) {
        setErrors({ [inputOf(err instanceof GraphQLFailure ? err.field : undefined) ?? 'form']: messageOf(err) });
      } finally {
        setBusy(false);
      }
    };
  return { values, setValues, set, errors, setErrors, busy, done, onSubmit };
}
