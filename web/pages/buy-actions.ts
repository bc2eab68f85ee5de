import { html } from 'htm/preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { gql, GraphQLFailure, savedSession } from '../api.js';
import { Failure, money } from '../ui.js';
import { describedBy, Field, FieldError, messageOf, useForm, type FormErrors } from '../form.js';

interface ActionsProps {
  id: string;
  status: string;
  currency: string;
  endTime: string;
  packages: { id: string; productId: string; budget: number }[];
}

const BUY_FIELDS = 'id status totalBudget endTime packages { id budget }';

/** What the buyer does to a live buy: pause, resume, cancel (with a reason), and new budgets. */
export function BuyActions(props: ActionsProps) {
  // Only the buyer acts on a buy (update_media_buy); a seller reading it sees no controls.
  if (savedSession()?.role !== 'buyer') return null;
  return html`<section aria-labelledby="actions-title" class="panel">
    <h3 id="actions-title">Actions</h3>
    ${['pending', 'active', 'paused'].includes(props.status) ? null : html`<p class="muted">A ${props.status} buy takes no more changes.</p>`}
    <${StatusActions} id=${props.id} status=${props.status} />
    ${['pending', 'active', 'paused'].includes(props.status) ? html`<${BudgetForm} ...${props} />` : null}
  </section>`;
}

function StatusActions({ id, status }: { id: string; status: string }) {
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const [reason, setReason] = useState('');
  const [errors, setErrors] = useState<FormErrors>({});
  const reasonInput = useRef<HTMLInputElement>(null);
  // The button that opened the confirmation is gone: the keyboard user lands on the question's input.
  useLayoutEffect(() => {
    if (confirming) reasonInput.current?.focus();
  }, [confirming]);
  const run = async (mutation: string, variables: Record<string, unknown>) => {
    if (busy) return;
    setBusy(true);
    setErrors({});
    try {
      await gql(`mutation($id: ID!${'r' in variables ? ', $r: String!' : ''}) { ${mutation} { ${BUY_FIELDS} } }`, { id, ...variables });
      setConfirming(false);
      setReason('');
    } catch (err) {
      setErrors({ [err instanceof GraphQLFailure && err.field === 'reason' ? 'reason' : 'form']: messageOf(err) });
    } finally {
      setBusy(false);
    }
  };
  const cancelable = ['pending', 'active', 'paused'].includes(status);
  return html`<div>
    ${errors.form ? html`<${Failure} error=${errors.form} />` : null}
    <div class="actions">
      ${status === 'active' || status === 'paused'
        ? // One button that changes its label (not two that swap), and aria-disabled while busy, so keyboard focus stays on it.
          html`<button type="button" aria-disabled=${busy ? 'true' : undefined} onClick=${() => run(status === 'active' ? 'pauseMediaBuy(id: $id)' : 'resumeMediaBuy(id: $id)', {})}>${status === 'active' ? 'Pause' : 'Resume'}</button>`
        : null}
      ${cancelable && !confirming ? html`<button type="button" class="secondary" disabled=${busy} onClick=${() => setConfirming(true)}>Cancel the buy…</button>` : null}
    </div>
    ${confirming
      ? html`<form class="confirm" aria-labelledby="cancel-title" onSubmit=${(e: Event) => {
          e.preventDefault();
          void run('cancelMediaBuy(id: $id, reason: $r)', { r: reason });
        }} noValidate>
          <h4 id="cancel-title">Cancel this buy for good?</h4>
          <p class="muted">A canceled buy cannot be resumed.</p>
          <label for="cancel-reason">Reason for canceling</label>
          <input ref=${reasonInput} ...${describedBy('cancel-reason', errors, 'reason')} required maxlength="500" value=${reason} onInput=${(e: Event) => setReason((e.target as HTMLInputElement).value)} />
          <${FieldError} id="cancel-reason" errors=${errors} name="reason" />
          <div class="actions">
            <button type="submit" class="danger" disabled=${busy}>Cancel the buy</button>
            <button type="button" class="secondary" disabled=${busy} onClick=${() => { setConfirming(false); setErrors({}); }}>Keep it</button>
          </div>
        </form>`
      : null}
  </div>`;
}

/** Where a budget change's error belongs: `packages[i].…` of what was sent is package `sent[i]`'s input. */
function inputOf(field: string | undefined, sent: number[]): string | undefined {
  const p = field ? /^packages\[(\d+)\]/.exec(field) : null;
  if (p && sent[Number(p[1])] !== undefined) return `pkg-${sent[Number(p[1])]}`;
  if (field === 'packages' && sent.length > 0) return `pkg-${sent[0]}`;
  if (field === 'endTime') return 'end';
  return undefined;
}

function BudgetForm({ id, currency, endTime, packages }: ActionsProps) {
  const form = useForm<Record<string, string>>(() => ({ end: endTime.slice(0, 10), ...Object.fromEntries(packages.map((p, i) => [`pkg-${i}`, String(p.budget)])) }));
  const { values, errors, set } = form;
  // The packages whose budget the form changes, by index: what `packages[i]` of an error refers to.
  const sent = packages.flatMap((p, i) => (values[`pkg-${i}`] !== String(p.budget) ? [i] : []));
  const submit = form.onSubmit(
    async () => {
      const end = values.end !== endTime.slice(0, 10) && values.end ? new Date(`${values.end}T23:59:59Z`).toISOString() : undefined;
      const input = { mediaBuyId: id, ...(sent.length ? { packages: sent.map((i) => ({ packageId: packages[i]!.id, budget: Number(values[`pkg-${i}`]) })) } : {}), ...(end ? { endTime: end } : {}) };
      const { changeMediaBuyBudget } = await gql<{ changeMediaBuyBudget: { totalBudget: number } }>(`mutation($i: MediaBuyBudgetInput!) { changeMediaBuyBudget(input: $i) { ${BUY_FIELDS} } }`, { i: input });
      return `Budget now ${money(changeMediaBuyBudget.totalBudget, currency)}.`;
    },
    (field) => inputOf(field, sent.length ? sent : [0]),
  );
  return html`<form aria-labelledby="budget-title" onSubmit=${submit} noValidate>
    <h4 id="budget-title">Budget and flight</h4>
    ${errors.form ? html`<${Failure} error=${errors.form} />` : null}
    ${packages.map(
      (p, i) => html`<${Field} id=${`budget-pkg-${i}`} label=${`Budget of ${p.productId} (${currency})`} errors=${errors} name=${`pkg-${i}`}>
        <input ...${describedBy(`budget-pkg-${i}`, errors, `pkg-${i}`)} type="number" inputmode="decimal" step="0.01" value=${values[`pkg-${i}`]} onInput=${set(`pkg-${i}`)} />
      <//>`,
    )}
    <${Field} id="budget-end" label="Flight ends" errors=${errors} name="end">
      <input ...${describedBy('budget-end', errors, 'end')} type="date" value=${values.end} onInput=${set('end')} />
    <//>
    <button type="submit" disabled=${form.busy}>${form.busy ? 'Saving…' : 'Change the budget'}</button>
    ${form.done ? html`<p role="status" class="muted">${form.done}</p>` : null}
  </form>`;
}
