import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { gql, GraphQLFailure } from '../api.js';
import { Failure, Loading } from '../ui.js';

interface Offered {
  productId: string;
  name: string;
  description: string;
  channels: string[];
  deliveryType: string;
  requiresApproval: boolean;
  briefRelevance: string | null;
  relevanceScore: number | null;
  formatIds: { id: string }[];
  pricingOptions: { pricingOptionId: string; pricingModel: string; price: number | null; floor: number | null; currency: string }[];
  targeting: { geoCountries: string[]; audiences: string[] };
}

const PRODUCTS = `query($brief: String, $filters: ProductFiltersInput) { products(brief: $brief, filters: $filters) {
  productId name description channels deliveryType requiresApproval briefRelevance relevanceScore
  formatIds { id }
  pricingOptions { pricingOptionId pricingModel price floor currency }
  targeting { geoCountries audiences }
} }`;

const FORMAT_TYPES = ['display', 'video', 'audio', 'native'];

/** A price as a buyer reads it: fixed, or an auction's floor. */
export const priceOf = (o: Offered['pricingOptions'][number]) =>
  `${o.pricingModel}${o.price !== null ? ` ${o.price} ${o.currency}` : o.floor !== null ? ` from ${o.floor} ${o.currency}` : ''}`;

/**
 * Product discovery: a brief ranks the seller's catalog, filters narrow it, and the products
 * chosen become the packages of a new buy.
 */
export function Products() {
  const [brief, setBrief] = useState('');
  const [channels, setChannels] = useState<string[]>([]);
  const [formatTypes, setFormatTypes] = useState<string[]>([]);
  const [deliveryType, setDeliveryType] = useState('');
  const [maxBudget, setMaxBudget] = useState('');
  const [allChannels, setAllChannels] = useState<string[]>([]);
  const [result, setResult] = useState<{ products?: Offered[]; error?: string; field?: string; busy: boolean }>({ busy: true });
  const [chosen, setChosen] = useState<string[]>([]);

  const search = async (e?: Event) => {
    e?.preventDefault();
    setResult((r) => ({ ...r, busy: true, error: undefined, field: undefined }));
    const filters = {
      ...(channels.length ? { channels } : {}),
      ...(formatTypes.length ? { formatTypes } : {}),
      ...(deliveryType ? { deliveryType } : {}),
      ...(maxBudget ? { budgetRange: { max: Number(maxBudget) } } : {}),
    };
    try {
      const { products } = await gql<{ products: Offered[] }>(PRODUCTS, { brief: brief.trim() || null, filters: Object.keys(filters).length ? filters : null });
      setResult({ products, busy: false });
      if (allChannels.length === 0) setAllChannels([...new Set(products.flatMap((p) => p.channels))].sort());
    } catch (err) {
      setResult({ error: err instanceof Error ? err.message : String(err), field: err instanceof GraphQLFailure ? err.field : undefined, busy: false });
    }
  };
  useEffect(() => void search(), []);

  const toggle = (list: string[], set: (v: string[]) => void, value: string) => set(list.includes(value) ? list.filter((v) => v !== value) : [...list, value]);
  const budgetError = result.field?.startsWith('filters.budgetRange') ? result.error : undefined;
  const products = result.products;
  return html`<section aria-labelledby="products-title">
    <h2 id="products-title">Products</h2>
    <form class="discovery" onSubmit=${search} aria-label="Find products">
      <div class="field">
        <label for="brief">Your brief</label>
        <textarea id="brief" rows="2" placeholder="e.g. live sports fans in the US on connected TV" value=${brief} onInput=${(e: Event) => setBrief((e.target as HTMLTextAreaElement).value)}></textarea>
      </div>
      <div class="filters">
        ${allChannels.length
          ? html`<fieldset>
              <legend>Channels</legend>
              ${allChannels.map((c) => html`<label class="check"><input type="checkbox" checked=${channels.includes(c)} onChange=${() => toggle(channels, setChannels, c)} /> ${c}</label>`)}
            </fieldset>`
          : null}
        <fieldset>
          <legend>Creative formats</legend>
          ${FORMAT_TYPES.map((t) => html`<label class="check"><input type="checkbox" checked=${formatTypes.includes(t)} onChange=${() => toggle(formatTypes, setFormatTypes, t)} /> ${t}</label>`)}
        </fieldset>
        <div class="field">
          <label for="delivery-type">Delivery</label>
          <select id="delivery-type" value=${deliveryType} onChange=${(e: Event) => setDeliveryType((e.target as HTMLSelectElement).value)}>
            <option value="">Any</option>
            <option value="guaranteed">Guaranteed</option>
            <option value="non_guaranteed">Non-guaranteed</option>
          </select>
        </div>
        <div class="field">
          <label for="max-budget">Budget up to</label>
          <input id="max-budget" type="number" inputmode="decimal" value=${maxBudget} onInput=${(e: Event) => setMaxBudget((e.target as HTMLInputElement).value)} aria-invalid=${budgetError ? 'true' : undefined} aria-describedby=${budgetError ? 'max-budget-error' : undefined} />
          ${budgetError ? html`<p id="max-budget-error" class="error" role="alert">${budgetError}</p>` : null}
        </div>
      </div>
      <button type="submit" disabled=${result.busy}>${result.busy ? 'Finding…' : 'Find products'}</button>
    </form>
    ${result.error && !budgetError ? html`<${Failure} error=${result.error} />` : null}
    ${!products && result.busy ? html`<${Loading} />` : null}
    ${products && products.length === 0 ? html`<p class="muted" role="status">No product matches these filters.</p>` : null}
    ${products && products.length > 0
      ? html`<p class="muted" role="status">${products.length} product${products.length === 1 ? '' : 's'}${brief.trim() ? ', the most relevant first' : ''}.</p>
          <ul class="cards">
            ${products.map(
              (p) => html`<li class="card" data-product=${p.productId}>
                <h3>${p.name}</h3>
                <p>${p.description}</p>
                <p class="muted">${p.channels.join(', ')} · ${p.deliveryType === 'guaranteed' ? 'guaranteed' : 'non-guaranteed'}${p.requiresApproval ? ' · the seller approves each buy' : ''}</p>
                ${p.briefRelevance ? html`<p class="muted">Relevance: ${p.briefRelevance}</p>` : null}
                <p>${p.pricingOptions.map(priceOf).join(' · ')}</p>
                ${p.targeting.geoCountries.length || p.targeting.audiences.length ? html`<p class="muted">Reaches ${[...p.targeting.audiences, ...p.targeting.geoCountries].join(', ')}</p>` : null}
                <label class="check"><input type="checkbox" checked=${chosen.includes(p.productId)} onChange=${() => toggle(chosen, setChosen, p.productId)} /> Choose<span class="visually-hidden"> ${p.name}</span></label>
              </li>`,
            )}
          </ul>`
      : null}
    <p class="sticky-actions">
      ${chosen.length
        ? html`<a class="button" href=${`#/buys/new?products=${chosen.map(encodeURIComponent).join(',')}`}>Plan a buy with ${chosen.length} product${chosen.length === 1 ? '' : 's'}</a>`
        : html`<span class="muted">Choose products to plan a buy with them.</span>`}
    </p>
  </section>`;
}
