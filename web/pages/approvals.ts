import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { gql } from '../api.js';
import { Failure, Loading, money, useQuery } from '../ui.js';

interface Waiting {
  id: string;
  type: string;
  status: string;
  message: string;
  mediaBuy: { id: string; buyerRef: string; totalBudget: number; currency: string; packages: { productId: string }[] } | null;
}

/** Seller demos: move the gateway's clock forward; the built-in ad server delivers up to the new time. */
function AdvanceClock() {
  const [hours, setHours] = useState('1');
  const [result, setResult] = useState<{ at?: string; error?: string }>({});
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const { advanceClock } = await gql<{ advanceClock: string }>('mutation($s: Int!) { advanceClock(seconds: $s) }', { s: Math.round(Number(hours) * 3600) });
      setResult({ at: advanceClock });
    } catch (err) {
      setResult({ error: err instanceof Error ? err.message : String(err) });
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="inline" onSubmit=${submit} aria-labelledby="clock-title">
    <h3 id="clock-title">Demo clock</h3>
    <label for="clock-hours">Hours</label>
    <input id="clock-hours" type="number" min="1" max="8784" value=${hours} onInput=${(e: Event) => setHours((e.target as HTMLInputElement).value)} aria-invalid=${result.error ? 'true' : undefined} aria-describedby=${result.error ? 'clock-error' : undefined} />
    <button type="submit" disabled=${busy}>Advance the clock</button>
    ${result.at ? html`<p role="status" class="muted">Clock at <time datetime=${result.at}>${result.at.replace('T', ' ').slice(0, 16)}</time> UTC</p>` : null}
    ${result.error ? html`<p id="clock-error" class="error" role="alert">${result.error}</p>` : null}
  </form>`;
}

/** The seller's approvals inbox, live. */
export function Approvals() {
  const { data, error, reload } = useQuery<{ approvals: Waiting[] }>(
    '{ approvals { id type status message mediaBuy { id buyerRef totalBudget currency packages { productId } } } }',
    {},
    { subscription: 'subscription { taskStatusChanged { position } }', variables: {} },
  );
  const [acting, setActing] = useState<string | undefined>();
  const [actionError, setActionError] = useState<string | undefined>();
  const act = async (task: Waiting, approve: boolean) => {
    setActing(task.id);
    setActionError(undefined);
    try {
      if (approve) await gql('mutation($t: ID!) { approveTask(taskId: $t) }', { t: task.id });
      else await gql('mutation($t: ID!, $r: String!) { rejectTask(taskId: $t, reason: $r) }', { t: task.id, r: 'Rejected in the console' });
      reload();
    } catch (err) {
      setActionError(err instanceof Error ? err.message : String(err));
    } finally {
      setActing(undefined);
    }
  };
  if (error && !data) return html`<${Failure} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  return html`<section aria-labelledby="approvals-title">
    <h2 id="approvals-title">Approvals</h2>
    ${actionError ? html`<${Failure} error=${actionError} />` : null}
    <${AdvanceClock} />
    ${data.approvals.length === 0
      ? html`<p class="muted">Nothing waits for you.</p>`
      : html`<ul class="cards">
          ${data.approvals.map(
            (t) => html`<li class="card" data-task=${t.id}>
              <h3>${t.mediaBuy ? html`<a href=${`#/buys/${encodeURIComponent(t.mediaBuy.id)}`}>${t.mediaBuy.buyerRef}</a>` : t.type}</h3>
              <p>${t.type} · <span class="status" data-status=${t.status}>${t.status}</span></p>
              ${t.mediaBuy ? html`<p>${money(t.mediaBuy.totalBudget, t.mediaBuy.currency)} · ${t.mediaBuy.packages.map((p) => p.productId).join(', ')}</p>` : null}
              <p class="muted">${t.message}</p>
              <div class="actions">
                <button type="button" disabled=${acting === t.id} onClick=${() => act(t, true)}>Approve</button>
                <button type="button" class="secondary" disabled=${acting === t.id} onClick=${() => act(t, false)}>Reject</button>
              </div>
            </li>`,
          )}
        </ul>`}
  </section>`;
}
