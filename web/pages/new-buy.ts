import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { gql } from '../api.js';
import { describedBy, Field, useForm } from '../form.js';
import { Failure, Loading, useQuery } from '../ui.js';

interface ProductChoice {
  productId: string;
  name: string;
  deliveryType: string;
  pricingOptions: { pricingOptionId: string; pricingModel: string; price: number | null; floor: number | null; currency: string }[];
}

/** Where a placement's error belongs: the input its `extensions.field` names (`packages[1].budget` → `pkg-1-budget`). */
function inputOf(field: string | undefined): string | undefined {
  if (!field) return undefined;
  const pkg = /^packages(?:\[(\d+)\])?(?:\.(\w+))?/.exec(field);
  if (pkg) {
    const i = pkg[1] ?? '0';
    return pkg[2] === 'budget' ? `pkg-${i}-budget` : pkg[2] === 'bidPrice' ? `pkg-${i}-bid` : `pkg-${i}-option`;
  }
  if (field === 'endTime' || field === 'startTime') return 'end';
  if (field.startsWith('brand')) return 'brand';
  if (field === 'buyerRef') return 'ref';
  return undefined;
}

interface PackageDraft {
  option: string;
  budget: string;
  bid: string;
}

/**
 * Place a media buy: one package per product chosen (on the products page, or here), each at one
 * of its prices; errors show at their field.
 */
export function NewBuy({ products: preselected = [] }: { products?: string[] }) {
  const products = useQuery<{ products: ProductChoice[] }>('{ products { productId name deliveryType pricingOptions { pricingOptionId pricingModel price floor currency } } }', {});
  const form = useForm({ ref: '', brand: '', end: '' });
  const [packages, setPackages] = useState<PackageDraft[]>([]);
  const catalog = products.data?.products ?? [];
  const options = catalog.flatMap((p) => p.pricingOptions.map((o) => ({ value: `${p.productId}|${o.pricingOptionId}`, label: `${p.name} — ${o.pricingModel}${o.price !== null ? ` ${o.price} ${o.currency}` : o.floor !== null ? ` from ${o.floor} ${o.currency}` : ''}${p.deliveryType === 'guaranteed' ? ' (guaranteed: waits for the seller)' : ''}`, auction: o.pricingModel.includes('auction') })));
  // Once the catalog is here: a package per product chosen before, at its first price (else one empty package).
  useEffect(() => {
    if (!products.data || packages.length) return;
    const drafts = preselected.flatMap((id) => {
      const p = catalog.find((c) => c.productId === id);
      return p ? [{ option: `${p.productId}|${p.pricingOptions[0]!.pricingOptionId}`, budget: '', bid: '' }] : [];
    });
    setPackages(drafts.length ? drafts : [{ option: '', budget: '', bid: '' }]);
  }, [products.data]);
  const setPackage = (i: number, name: keyof PackageDraft) => (e: Event) => setPackages(packages.map((p, j) => (j === i ? { ...p, [name]: (e.target as HTMLInputElement).value } : p)));
  const auction = (p: PackageDraft) => options.find((o) => o.value === p.option)?.auction ?? false;
  const { values, errors } = form;
  const submit = form.onSubmit(async () => {
    const input = {
      buyerRef: values.ref.trim(),
      brandUrl: values.brand.trim(),
      endTime: values.end ? new Date(`${values.end}T23:59:59Z`).toISOString() : '',
      packages: packages.map((p) => {
        const [productId, pricingOptionId] = p.option.split('|');
        return { productId: productId ?? '', pricingOptionId: pricingOptionId ?? '', budget: Number(p.budget), ...(auction(p) && p.bid ? { bidPrice: Number(p.bid) } : {}) };
      }),
    };
    const { placeMediaBuy } = await gql<{ placeMediaBuy: { id: string } }>('mutation($i: MediaBuyInput!) { placeMediaBuy(input: $i) { id } }', { i: input });
    location.hash = `#/buys/${encodeURIComponent(placeMediaBuy.id)}`;
  }, inputOf);
  const field = (name: string, label: string, input: unknown) => html`<${Field} id=${`buy-${name}`} label=${label} errors=${errors} name=${name}>${input}<//>`;
  const described = (name: string) => ({ ...describedBy(`buy-${name}`, errors, name), name });
  const total = packages.reduce((t, p) => t + (Number(p.budget) || 0), 0);
  if (products.error && !products.data) return html`<${Failure} error=${products.error} />`;
  if (!products.data) return html`<${Loading} />`;
  return html`<section aria-labelledby="new-buy-title">
    <p><a href="#/buys">← Media buys</a> · <a href="#/products">Find products</a></p>
    <h2 id="new-buy-title">New media buy</h2>
    ${errors.form ? html`<${Failure} error=${errors.form} />` : null}
    <form onSubmit=${submit} noValidate>
      ${field('ref', 'Your reference', html`<input ...${described('ref')} required value=${values.ref} onInput=${form.set('ref')} />`)}
      ${field('brand', 'Brand website', html`<input ...${described('brand')} type="url" placeholder="https://brand.example" required value=${values.brand} onInput=${form.set('brand')} />`)}
      ${packages.map(
        (p, i) => html`<fieldset class="package" data-package=${i}>
          <legend>Package ${i + 1}</legend>
          ${field(`pkg-${i}-option`, 'Product and price', html`<select ...${described(`pkg-${i}-option`)} required value=${p.option} onChange=${setPackage(i, 'option')}>
            <option value="">Choose a product…</option>
            ${options.map((o) => html`<option value=${o.value}>${o.label}</option>`)}
          </select>`)}
          ${field(`pkg-${i}-budget`, 'Budget', html`<input ...${described(`pkg-${i}-budget`)} type="number" inputmode="decimal" required value=${p.budget} onInput=${setPackage(i, 'budget')} />`)}
          ${auction(p) ? field(`pkg-${i}-bid`, 'Bid (CPM)', html`<input ...${described(`pkg-${i}-bid`)} type="number" inputmode="decimal" value=${p.bid} onInput=${setPackage(i, 'bid')} />`) : null}
          ${packages.length > 1 ? html`<button type="button" class="secondary" onClick=${() => setPackages(packages.filter((_, j) => j !== i))}>Remove package ${i + 1}</button>` : null}
        </fieldset>`,
      )}
      <p><button type="button" class="secondary" onClick=${() => setPackages([...packages, { option: '', budget: '', bid: '' }])}>Add a package</button></p>
      ${field('end', 'Flight ends', html`<input ...${described('end')} type="date" required value=${values.end} onInput=${form.set('end')} />`)}
      <p class="muted" aria-live="polite">Total budget: ${total.toLocaleString('en')}</p>
      <button type="submit" disabled=${form.busy}>${form.busy ? 'Placing…' : 'Place the buy'}</button>
    </form>
  </section>`;
}
