import { html } from 'htm/preact';
import { day, Failure, Loading, money, useQuery, type BuyRow } from '../ui.js';

/** The buyer's media buys, live. */
export function Buys({ operator = false }: { operator?: boolean }) {
  const { data, error } = useQuery<{ mediaBuysConnection: { edges: { node: BuyRow }[] } }>(
    '{ mediaBuysConnection(first: 100) { edges { node { id buyerRef status currency totalBudget startTime endTime } } } }',
    {},
    { subscription: 'subscription { mediaBuyUpdated { position } }', variables: {} },
  );
  if (error && !data) return html`<${Failure} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  const buys = data.mediaBuysConnection.edges.map((e) => e.node);
  return html`<section aria-labelledby="buys-title">
    <h2 id="buys-title">Media buys</h2>
    ${operator ? html`<p class="muted">Every buyer's buys.</p>` : html`<p><a href="#/products">Find products</a> · <a href="#/buys/new">New media buy</a></p>`}
    ${error ? html`<${Failure} error=${error} />` : null}
    ${buys.length === 0
      ? html`<p class="muted">No media buys yet.</p>`
      : html`<table>
          <caption class="visually-hidden">Your media buys</caption>
          <thead><tr><th scope="col">Buy</th><th scope="col">Status</th><th scope="col">Budget</th><th scope="col">Flight</th></tr></thead>
          <tbody>
            ${buys.map(
              (b) => html`<tr data-buy=${b.id}>
                <td><a href=${`#/buys/${encodeURIComponent(b.id)}`}>${b.buyerRef}</a></td>
                <td><span class=${`status status-${b.status}`} data-status=${b.status}>${b.status}</span></td>
                <td>${money(b.totalBudget, b.currency)}</td>
                <td>${day(b.startTime)} – ${day(b.endTime)}</td>
              </tr>`,
            )}
          </tbody>
        </table>`}
  </section>`;
}
