import { html } from 'htm/preact';
import { Failure, Loading, useQuery } from '../ui.js';
import { CreativeLibrary } from './creatives.js';

interface Activity {
  idempotencyKey: string;
  notificationType: string;
  taskId: string | null;
  url: string;
  state: string;
  attempts: { attempt: number; outcome: string; httpStatus: number | null; durationMs: number | null; startedAt: string; errorMessage: string | null }[];
}

interface Received {
  id: string;
  endpointId: string;
  sender: string;
  taskId: string | null;
  taskType: string | null;
  status: string | null;
  notificationType: string | null;
  receivedAt: string;
}

const time = (iso: string) => html`<time datetime=${iso}>${iso.replace('T', ' ').slice(0, 19)}</time>`;

/** The webhooks the seller sent about one buy, each with its attempts; live. */
export function BuyWebhookActivity({ id }: { id: string }) {
  const { data, error } = useQuery<{ mediaBuy: { webhookActivity: Activity[] } | null }>(
    'query($id: ID!) { mediaBuy(id: $id) { webhookActivity(first: 20) { idempotencyKey notificationType taskId url state attempts { attempt outcome httpStatus durationMs startedAt errorMessage } } } }',
    { id },
    { subscription: 'subscription { webhookActivity { position } }', variables: {} },
  );
  const fires = data?.mediaBuy?.webhookActivity ?? [];
  return html`<section aria-labelledby="activity-title" class="panel">
    <h3 id="activity-title">Webhook activity</h3>
    ${error && !data ? html`<${Failure} error=${error} />` : !data ? html`<${Loading} />` : fires.length === 0
      ? html`<p class="muted">No webhook sent about this buy (it has no push notification URL, or nothing to report yet).</p>`
      : html`<ul class="cards">
          ${fires.map(
            (f) => html`<li class="card" data-webhook=${f.idempotencyKey} data-state=${f.state}>
              <h4>${f.notificationType}${f.taskId ? ` · ${f.taskId}` : ''}</h4>
              <p><span class=${`status status-${f.state}`}>${f.state.replace('_', ' ')}</span></p>
              <p class="muted wrap">${f.url}</p>
              <ol class="attempts">
                ${f.attempts.map(
                  (a) => html`<li>Attempt ${a.attempt}: ${a.outcome}${a.httpStatus !== null ? ` (HTTP ${a.httpStatus})` : ''}${a.durationMs !== null ? ` in ${a.durationMs} ms` : ''} at ${time(a.startedAt)}${a.errorMessage ? html` <span class="error">${a.errorMessage}</span>` : null}</li>`,
                )}
              </ol>
            </li>`,
          )}
        </ul>`}
  </section>`;
}

/** What the buyer's own receiver endpoints accepted, newest first, live; and their creative library. */
export function Webhooks() {
  const { data, error } = useQuery<{ receivedWebhooks: Received[] }>(
    '{ receivedWebhooks(limit: 50) { id endpointId sender taskId taskType status notificationType receivedAt } }',
    {},
    { subscription: 'subscription { receivedWebhook { position } }', variables: {} },
  );
  return html`<section aria-labelledby="webhooks-title">
    <h2 id="webhooks-title">Received webhooks</h2>
    <p class="muted">What sellers sent to your receiver endpoints (verified; each once), newest first.</p>
    ${error && !data ? html`<${Failure} error=${error} />` : !data ? html`<${Loading} />` : data.receivedWebhooks.length === 0
      ? html`<p class="muted">No webhook received yet.</p>`
      : html`<ul class="cards" aria-live="polite">
          ${data.receivedWebhooks.map(
            (w) => html`<li class="card" data-received=${w.id}>
              <h3>${w.taskType ?? w.notificationType ?? 'notification'}${w.status ? html` <span class="status" data-status=${w.status}>${w.status}</span>` : null}</h3>
              <p class="wrap">${w.taskId ? `Task ${w.taskId}` : null}</p>
              <p class="muted wrap">From ${w.sender} to endpoint ${w.endpointId}, ${time(w.receivedAt)}</p>
            </li>`,
          )}
        </ul>`}
    ${error && data ? html`<${Failure} error=${error} />` : null}
  </section>
  <${CreativeLibrary} />`;
}
