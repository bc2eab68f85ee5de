import { html } from 'htm/preact';
import { day, Failure, Loading, money, useQuery, type BuyRow } from '../ui.js';
import { BuyActions } from './buy-actions.js';
import { BuyCreatives } from './creatives.js';
import { BuyWebhookActivity } from './webhooks.js';

interface BuyDetailData {
  mediaBuy: null | (BuyRow & {
    packages: { id: string; productId: string; budget: number }[];
    task: { id: string; status: string; history: { status: string; at: string; message: string }[] } | null;
    timeline: { position: number; event: string; status: string | null; note: string | null; at: string }[];
    delivery: { totals: { impressions: number; clicks: number; spend: number }; series: { start: string; impressions: number; spend: number }[] };
  });
}

/** One buy: its packages, its history, its delivery; live. */
export function BuyDetail({ id }: { id: string }) {
  const { data, error } = useQuery<BuyDetailData>(
    `query($id: ID!) { mediaBuy(id: $id) {
      id buyerRef status currency totalBudget startTime endTime
      packages { id productId budget }
      task { id status history { status at message } }
      timeline { position event status note at }
      delivery(granularity: HOURLY) { totals { impressions clicks spend } series { start impressions spend } }
    } }`,
    { id },
    { subscription: 'subscription($ids: [String!]) { mediaBuyUpdated(ids: $ids) { position } }', variables: { ids: [id] } },
    { subscription: 'subscription($ids: [String!]) { deliveryUpdated(mediaBuyIds: $ids) { position } }', variables: { ids: [id] } },
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
    <${DeliveryChart} series=${b.delivery.series} totals=${b.delivery.totals} currency=${b.currency} />
    <h3>History</h3>
    <ol class="timeline">
      ${b.timeline.map((t) => html`<li><time datetime=${t.at}>${t.at.replace('T', ' ').slice(0, 16)}</time> ${t.event.replace(/^MediaBuy/, '')}${t.status ? ` → ${t.status}` : ''}${t.note ? ` (${t.note})` : ''}</li>`)}
    </ol>
  </section>`;
}

/** Impressions per hour as bars, with the numbers in a table for those who do not see the chart. */
function DeliveryChart({ series, totals, currency }: { series: { start: string; impressions: number; spend: number }[]; totals: { impressions: number; clicks: number; spend: number }; currency: string }) {
  if (series.length === 0) return html`<p class="muted">No delivery recorded yet.</p>`;
  const max = Math.max(...series.map((p) => p.impressions), 1);
  const width = 40 * series.length;
  return html`<figure class="chart" data-total-impressions=${totals.impressions}>
    <svg role="img" aria-labelledby="chart-title" viewBox=${`0 0 ${width} 120`} preserveAspectRatio="none">
      <title id="chart-title">Impressions per hour: ${totals.impressions} in all</title>
      ${series.map((p, i) => {
        const h = Math.round((p.impressions / max) * 110);
        return html`<rect class="bar" data-impressions=${p.impressions} x=${i * 40 + 4} y=${120 - h} width="32" height=${h}><title>${p.start}: ${p.impressions}</title></rect>`;
      })}
    </svg>
    <figcaption>${totals.impressions} impressions, ${totals.clicks} clicks, ${money(totals.spend, currency)} spent</figcaption>
  </figure>`;
}
