import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { gql } from '../api.js';
import { Failure, Loading } from '../ui.js';
import { failureOf, when } from './registry-ui.js';

interface Brand {
  domain: string;
  found: boolean;
  name: string | null;
  canonicalId: string | null;
  names: { language: string; name: string }[];
  kellerType: string | null;
  relationship: string | null;
  house: { domain: string; name: string | null; confirmed: boolean } | null;
  brandAgentUrl: string | null;
  logoUrl: string | null;
  colors: { role: string; value: string }[];
  source: string | null;
  crawledAt: string | null;
}

const QUERY = `query($d: [String!]!) { brands(domains: $d) {
  domain found name canonicalId names { language name } kellerType relationship
  house { domain name confirmed } brandAgentUrl logoUrl colors { role value } source crawledAt } }`;

const RELATIONSHIP: Record<string, string> = {
  INLINE: 'listed by its house',
  MUTUAL: 'brand and house name each other',
  LEAF_ONLY: 'claimed by the brand only',
  HOUSE_ONLY: 'named by the house only',
  STANDALONE: 'standalone',
  UNVERIFIABLE: 'its house could not be checked',
};
const SOURCE: Record<string, string> = { HOSTED: 'registered by an operator', BRAND_JSON: 'its brand.json' };

function BrandCard({ brand }: { brand: Brand }) {
  if (!brand.found) {
    return html`<li class="card" data-brand=${brand.domain} data-found="false">
      <h3>${brand.domain}</h3>
      <p><strong>Not found.</strong> The registry knows no brand for this domain: it was never registered, or its brand.json names none.</p>
    </li>`;
  }
  return html`<li class="card" data-brand=${brand.domain} data-found="true">
    <h3>${brand.name}</h3>
    <dl class="facts">
      <dt>Domain</dt><dd>${brand.domain}</dd>
      <dt>Canonical id</dt><dd><code>${brand.canonicalId}</code></dd>
      ${brand.names.length > 1 ? html`<dt>Names</dt><dd>${brand.names.map((n) => `${n.name} (${n.language})`).join(', ')}</dd>` : null}
      <dt>Hierarchy</dt>
      <dd data-hierarchy>
        ${brand.house
          ? html`${brand.kellerType ?? 'brand'} of <strong>${brand.house.name ?? brand.house.domain}</strong> (${brand.house.domain}) — ${brand.house.confirmed ? 'confirmed by the house' : 'not confirmed by the house'}`
          : html`${brand.kellerType ? `${brand.kellerType}, ` : ''}no house`}
        ${brand.relationship ? html`<br /><span class="muted">Relationship: ${RELATIONSHIP[brand.relationship] ?? brand.relationship}</span>` : null}
      </dd>
      ${brand.logoUrl ? html`<dt>Logo</dt><dd><code>${brand.logoUrl}</code></dd>` : null}
      ${brand.colors.length ? html`<dt>Colors</dt><dd>${brand.colors.map((c) => `${c.role} ${c.value}`).join(', ')}</dd>` : null}
      ${brand.brandAgentUrl ? html`<dt>Brand agent</dt><dd><code>${brand.brandAgentUrl}</code></dd>` : null}
      <dt>Source</dt><dd>${brand.source ? SOURCE[brand.source] ?? brand.source : '—'}${brand.crawledAt ? html`; crawled ${when(brand.crawledAt)}` : null}</dd>
    </dl>
  </li>`;
}

/** Brand lookup: one or more domains, each resolved with its place in its house, or "not found". */
export function BrandLookup() {
  const [domains, setDomains] = useState('');
  const [state, setState] = useState<{ busy?: boolean; brands?: Brand[]; error?: string; field?: string }>({});
  const submit = async (e: Event) => {
    e.preventDefault();
    const list = domains.split(/[\s,]+/).map((d) => d.trim()).filter(Boolean);
    if (list.length === 0) return setState({ error: 'Enter at least one domain.', field: 'domains' });
    setState({ busy: true });
    try {
      setState({ brands: (await gql<{ brands: Brand[] }>(QUERY, { d: list })).brands });
    } catch (err) {
      const f = failureOf(err);
      setState({ error: f.message, field: f.field });
    }
  };
  const invalid = Boolean(state.error && state.field?.startsWith('domains'));
  return html`<section aria-labelledby="brands-title">
    <h2 id="brands-title">Brand lookup</h2>
    <form onSubmit=${submit} noValidate>
      <label for="brand-domains">Domains</label>
      <p id="brand-domains-hint" class="muted hint">One or more, separated by spaces or commas (at most 100).</p>
      <input id="brand-domains" name="domains" required value=${domains} onInput=${(e: Event) => setDomains((e.target as HTMLInputElement).value)}
        aria-describedby=${invalid ? 'brand-domains-hint brand-domains-error' : 'brand-domains-hint'} aria-invalid=${invalid ? 'true' : undefined} />
      ${invalid ? html`<p id="brand-domains-error" class="error" role="alert">${state.error}</p>` : null}
      <div><button type="submit" disabled=${state.busy}>${state.busy ? 'Looking up…' : 'Look up'}</button></div>
    </form>
    ${state.error && !invalid ? html`<${Failure} error=${state.error} />` : null}
    ${state.busy ? html`<${Loading} />` : null}
    ${state.brands ? html`<ul class="cards" aria-label="Brands found">${state.brands.map((b) => html`<${BrandCard} brand=${b} />`)}</ul>` : null}
  </section>`;
}
