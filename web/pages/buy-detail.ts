import { html } from 'htm/preact';
import { BuyDelivery } from './delivery.js';
import { day, Failure, Loading, money, useQuery, type BuyRow } from '../ui.js';
import { BuyActions } from './buy-actions.js';
import { BuyCreatives } from './creatives.js';
import { BuyWebhookActivity } from './webhooks.js';

interface BuyDetailData {
  mediaBuy: null | (BuyRow & {
    packages: { id: string; productId: string; budget: number }[];
    task: { id: string; status: string; history: { status: string; at: string; message: string }[] } | null;
    timeline: { position: number; event: string; status: string | null; note: string | null; at: string }[];
  });
}

/** One buy: its packages, its history, its delivery; live. */
export function BuyDetail({ id, operator = false }: { id: string; operator?: boolean }) {
  const { data, error } = useQuery<BuyDetailData>(
    `query($id: ID!) { mediaBuy(id: $id) {
      id buyerRef status currency totalBudget startTime endTime
      packages { id productId budget }
      task { id status history { status at message } }
      timeline { position event status note at }
    } }`,
    { id },
    { subscription: 'subscription($ids: [String!]) { mediaBuyUpdated(ids: $ids) { position } }', variables: { ids: [id] } },
  );
  if (error && !data) return html`<${Failure} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  const b = data.mediaBuy;
  if (!b) return html`<p class="muted">No media buy ${id} that you may see.</p>`;
  return html`<section aria-labelledby="buy-title">
    <p><a href="#/buys">← Media buys</a></p>
    <h2 id="buy-title">${b.buyerRef} <span class=${`status status-${b.status}`} data-status=${b.status} aria-live="polite">${b.status}</span></h2>
    <p class="muted">${b.id} · ${money(b.totalBudget, b.currency)} · ${day(b.startTime)} – ${day(b.endTime)}</p>
    <h3>Packages</h3>
    <ul>${b.packages.map((p) => html`<li>${p.productId}: ${money(p.budget, b.currency)}</li>`)}</ul>
    <${BuyActions} id=${b.id} status=${b.status} currency=${b.currency} endTime=${b.endTime} packages=${b.packages} />
    <${BuyCreatives} id=${b.id} packages=${b.packages} />
    <${BuyWebhookActivity} id=${b.id} />
    <h3>Delivery</h3>
    <${BuyDelivery} buy=${b} operator=${operator} />
    <h3>History</h3>
    <ol class="timeline">
      ${b.timeline.map((t) => html`<li><time datetime=${t.at}>${t.at.replace('T', ' ').slice(0, 16)}</time> ${t.event.replace(/^MediaBuy/, '')}${t.status ? ` → ${t.status}` : ''}${t.note ? ` (${t.note})` : ''}</li>`)}
    </ol>
  </section>`;
}
