import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { gql } from '../api.js';
import { Failure, Loading, money, useQuery } from '../ui.js';

interface Waiting {
  id: string;
  type: string;
  status: string;
  message: string;
  history: { status: string; at: string; message: string }[];
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

/** One waiting task: what it is about, its history, and the seller's three answers (a reason for two of them). */
function ApprovalCard({ task, onDone }: { task: Waiting; onDone: () => void }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<{ message: string; atReason: boolean } | undefined>();
  const act = async (decision: 'approve' | 'input' | 'reject') => {
    if (decision !== 'approve' && !reason.trim()) {
      setError({ message: decision === 'reject' ? 'Say why you reject it: the buyer reads it.' : 'Say what you need from the buyer.', atReason: true });
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      if (decision === 'approve') await gql('mutation($t: ID!, $n: String) { approveTask(taskId: $t, note: $n) }', { t: task.id, n: reason.trim() || null });
      else if (decision === 'reject') await gql('mutation($t: ID!, $r: String!) { rejectTask(taskId: $t, reason: $r) }', { t: task.id, r: reason.trim() });
      else await gql('mutation($t: ID!, $r: String!) { requestInput(taskId: $t, reason: $r) }', { t: task.id, r: reason.trim() });
      onDone();
    } catch (err) {
      setError({ message: err instanceof Error ? err.message : String(err), atReason: false });
    } finally {
      setBusy(false);
    }
  };
  const reasonId = `reason-${task.id}`;
  return html`<li class="card" data-task=${task.id}>
    <h3>${task.mediaBuy ? html`<a href=${`#/buys/${encodeURIComponent(task.mediaBuy.id)}`}>${task.mediaBuy.buyerRef}</a>` : task.type}</h3>
    <p>${task.type} · <span class="status" data-status=${task.status}>${task.status}</span></p>
    ${task.mediaBuy ? html`<p>${money(task.mediaBuy.totalBudget, task.mediaBuy.currency)} · ${task.mediaBuy.packages.map((p) => p.productId).join(', ')}</p>` : null}
    <details>
      <summary>History</summary>
      <ol class="timeline">${task.history.map((h) => html`<li><time datetime=${h.at}>${h.at.replace('T', ' ').slice(0, 16)}</time> ${h.status}${h.message ? `: ${h.message}` : ''}</li>`)}</ol>
    </details>
    <div class="field">
      <label for=${reasonId}>Note or reason</label>
      <input id=${reasonId} value=${reason} onInput=${(e: Event) => setReason((e.target as HTMLInputElement).value)} aria-invalid=${error?.atReason ? 'true' : undefined} aria-describedby=${error ? `${reasonId}-error` : undefined} />
      ${error ? html`<p id=${`${reasonId}-error`} class="error" role="alert">${error.message}</p>` : null}
    </div>
    <div class="actions">
      <button type="button" disabled=${busy} onClick=${() => act('approve')}>Approve</button>
      <button type="button" class="secondary" disabled=${busy} onClick=${() => act('input')}>Ask for input</button>
      <button type="button" class="secondary" disabled=${busy} onClick=${() => act('reject')}>Reject</button>
    </div>
  </li>`;
}

/** The seller's approvals inbox, live. */
export function Approvals() {
  const { data, error, reload } = useQuery<{ approvals: Waiting[] }>(
    '{ approvals { id type status message history { status at message } mediaBuy { id buyerRef totalBudget currency packages { productId } } } }',
    {},
    { subscription: 'subscription { taskStatusChanged { position } }', variables: {} },
  );
  if (error && !data) return html`<${Failure} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  return html`<section aria-labelledby="approvals-title">
    <h2 id="approvals-title">Approvals</h2>
    ${error ? html`<${Failure} error=${error} />` : null}
    <${AdvanceClock} />
    ${data.approvals.length === 0
      ? html`<p class="muted">Nothing waits for you.</p>`
      : html`<ul class="cards">${data.approvals.map((t) => html`<${ApprovalCard} key=${t.id} task=${t} onDone=${reload} />`)}</ul>`}
  </section>`;
}
