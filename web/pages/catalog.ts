import { html } from 'htm/preact';
import { Failure, Loading, useQuery } from '../ui.js';
import { priceOf } from './products.js';

interface CatalogProduct {
  productId: string;
  name: string;
  channels: string[];
  deliveryType: string;
  requiresApproval: boolean;
  pricingOptions: { pricingOptionId: string; pricingModel: string; price: number | null; floor: number | null; currency: string }[];
  targeting: { geoCountries: string[]; audiences: string[] };
  capacity: { dailyImpressions: number; ctr: number } | null;
}

/** The seller's catalog as buyers are offered it, with what the ad server can deliver of each product. */
export function Catalog() {
  const { data, error } = useQuery<{ catalog: CatalogProduct[] }>(
    '{ catalog { productId name channels deliveryType requiresApproval pricingOptions { pricingOptionId pricingModel price floor currency } targeting { geoCountries audiences } capacity { dailyImpressions ctr } } }',
    {},
  );
  if (error && !data) return html`<${Failure} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  return html`<section aria-labelledby="catalog-title">
    <h2 id="catalog-title">Catalog</h2>
    <p class="muted">What buyers are offered (the gateway's CATALOG_FILE), and the daily capacity the built-in ad server delivers against.</p>
    ${data.catalog.length === 0
      ? html`<p class="muted">The catalog is empty.</p>`
      : html`<div class="scroll"><table>
          <caption class="visually-hidden">Products in the catalog</caption>
          <thead><tr><th scope="col">Product</th><th scope="col">Channels</th><th scope="col">Delivery</th><th scope="col">Prices</th><th scope="col">Capacity a day</th><th scope="col">CTR</th></tr></thead>
          <tbody>
            ${data.catalog.map(
              (p) => html`<tr data-product=${p.productId}>
                <th scope="row">${p.name}<br /><span class="muted">${p.productId}</span></th>
                <td>${p.channels.join(', ')}</td>
                <td>${p.deliveryType === 'guaranteed' ? 'guaranteed' : 'non-guaranteed'}${p.requiresApproval ? ', you approve each buy' : ''}</td>
                <td>${p.pricingOptions.map(priceOf).join(' · ')}</td>
                <td data-capacity=${p.capacity?.dailyImpressions}>${p.capacity ? p.capacity.dailyImpressions.toLocaleString('en') : '—'}</td>
                <td>${p.capacity ? `${Math.round(p.capacity.ctr * 10000) / 100} %` : '—'}</td>
              </tr>`,
            )}
          </tbody>
        </table></div>`}
  </section>`;
}
