import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { gql, GraphQLFailure } from '../api.js';
import { Failure, Loading, useQuery } from '../ui.js';

interface ProductChoice {
  productId: string;
  name: string;
  deliveryType: string;
  pricingOptions: { pricingOptionId: string; pricingModel: string; price: number | null; floor: number | null; currency: string }[];
}

/** Where a placement's error belongs: the input its `extensions.field` names. */
function inputOf(field: string | undefined): string | undefined {
  if (!field) return undefined;
  if (/^packages\[0\]\.(budget)$/.test(field)) return 'budget';
  if (/^packages\[0\]\.bidPrice$/.test(field)) return 'bid';
  if (/^packages(\[0\])?(\.|$)/.test(field)) return 'option';
  if (field === 'endTime' || field === 'startTime') return 'end';
  if (field.startsWith('brand')) return 'brand';
  if (field === 'buyerRef') return 'ref';
  return undefined;
}

/** Place a media buy: one package of a product at one of its prices; errors show at their field. */
export function NewBuy() {
  const products = useQuery<{ products: ProductChoice[] }>('{ products { productId name deliveryType pricingOptions { pricingOptionId pricingModel price floor currency } } }', {});
  const [values, setValues] = useState({ ref: '', brand: '', option: '', budget: '', bid: '', end: '' });
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState(false);
  const set = (name: keyof typeof values) => (e: Event) => setValues({ ...values, [name]: (e.target as HTMLInputElement).value });
  const options = (products.data?.products ?? []).flatMap((p) => p.pricingOptions.map((o) => ({ value: `${p.productId}|${o.pricingOptionId}`, label: `${p.name} — ${o.pricingModel}${o.price !== null ? ` ${o.price} ${o.currency}` : o.floor !== null ? ` from ${o.floor} ${o.currency}` : ''}${p.deliveryType === 'guaranteed' ? ' (guaranteed: waits for the seller)' : ''}`, auction: o.pricingModel.includes('auction') })));
  const chosen = options.find((o) => o.value === values.option);
  const submit = async (e: Event) => {
    e.preventDefault();
    const [productId, pricingOptionId] = values.option.split('|');
    setBusy(true);
    setErrors({});
    try {
      const input = {
        buyerRef: values.ref.trim(),
        brandUrl: values.brand.trim(),
        endTime: values.end ? new Date(`${values.end}T23:59:59Z`).toISOString() : '',
        packages: [{ productId: productId ?? '', pricingOptionId: pricingOptionId ?? '', budget: Number(values.budget), ...(chosen?.auction && values.bid ? { bidPrice: Number(values.bid) } : {}) }],
      };
      const { placeMediaBuy } = await gql<{ placeMediaBuy: { id: string } }>('mutation($i: MediaBuyInput!) { placeMediaBuy(input: $i) { id } }', { i: input });
      location.hash = `#/buys/${encodeURIComponent(placeMediaBuy.id)}`;
    } catch (err) {
      const failure = err instanceof GraphQLFailure ? err : undefined;
      const at = inputOf(failure?.field);
      setErrors({ [at ?? 'form']: err instanceof Error ? err.message : String(err) });
    } finally {
      setBusy(false);
    }
  };
  const field = (name: keyof typeof values, label: string, input: unknown) => html`<div class="field">
    <label for=${`buy-${name}`}>${label}</label>
    ${input}
    ${errors[name] ? html`<p id=${`buy-${name}-error`} class="error" role="alert">${errors[name]}</p>` : null}
  </div>`;
  const described = (name: string) => ({ id: `buy-${name}`, name, 'aria-invalid': errors[name] ? 'true' : undefined, 'aria-describedby': errors[name] ? `buy-${name}-error` : undefined });
  if (products.error && !products.data) return html`<${Failure} error=${products.error} />`;
  if (!products.data) return html`<${Loading} />`;
  return html`<section aria-labelledby="new-buy-title">
    <p><a href="#/buys">← Media buys</a></p>
    <h2 id="new-buy-title">New media buy</h2>
    ${errors.form ? html`<${Failure} error=${errors.form} />` : null}
    <form onSubmit=${submit} noValidate>
      ${field('ref', 'Your reference', html`<input ...${described('ref')} required value=${values.ref} onInput=${set('ref')} />`)}
      ${field('brand', 'Brand website', html`<input ...${described('brand')} type="url" placeholder="https://brand.example" required value=${values.brand} onInput=${set('brand')} />`)}
      ${field('option', 'Product and price', html`<select ...${described('option')} required value=${values.option} onChange=${set('option')}>
        <option value="">Choose a product…</option>
        ${options.map((o) => html`<option value=${o.value}>${o.label}</option>`)}
      </select>`)}
      ${field('budget', 'Budget', html`<input ...${described('budget')} type="number" inputmode="decimal" required value=${values.budget} onInput=${set('budget')} />`)}
      ${chosen?.auction ? field('bid', 'Bid (CPM)', html`<input ...${described('bid')} type="number" inputmode="decimal" value=${values.bid} onInput=${set('bid')} />`) : null}
      ${field('end', 'Flight ends', html`<input ...${described('end')} type="date" required value=${values.end} onInput=${set('end')} />`)}
      <button type="submit" disabled=${busy}>${busy ? 'Placing…' : 'Place the buy'}</button>
    </form>
  </section>`;
}
