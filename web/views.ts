import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { finishOAuthSignIn, gql, GraphQLFailure, startOAuthSignIn, subscribe, type Session } from './api.js';

/** What a page shows while it loads, when it failed, and when there is nothing. */
export function Loading() {
  return html`<p class="muted" role="status">Loading…</p>`;
}

export function Failure({ error }: { error: string }) {
  return html`<p class="error" role="alert">${error}</p>`;
}

/** Loads a query, and loads it again whenever one of the `live` subscriptions says something changed. */
function useQuery<T>(query: string, variables: Record<string, unknown>, ...live: { subscription: string; variables: Record<string, unknown> }[]): { data?: T; error?: string; reload: () => void } {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const [version, setVersion] = useState(0);
  const key = JSON.stringify(variables);
  useEffect(() => {
    let current = true;
    gql<T>(query, variables).then(
      (data) => current && setState({ data }),
      (err: unknown) => current && setState((s) => ({ ...s, error: err instanceof Error ? err.message : String(err) })),
    );
    return () => {
      current = false;
    };
  }, [query, key, version]);
  useEffect(() => {
    const stops = live.map((l) => subscribe(l.subscription, l.variables, () => setVersion((v) => v + 1), (message) => setState((s) => ({ ...s, error: message }))));
    return () => stops.forEach((stop) => stop());
  }, [JSON.stringify(live)]);
  return { ...state, reload: () => setVersion((v) => v + 1) };
}

const money = (amount: number, currency: string) => new Intl.NumberFormat('en', { style: 'currency', currency }).format(amount);
const day = (iso: string) => iso.slice(0, 10);

/**
 * Sign in through the gateway's sign-in page (OAuth, the key stays with the gateway), or by
 * pasting an API key (kept for this tab only).
 */
export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [oauthError, setOauthError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  // A return from the gateway's sign-in page carries a code to exchange.
  useEffect(() => {
    finishOAuthSignIn().then(
      (session) => session && onSignedIn(session),
      (err: unknown) => setOauthError(err instanceof Error ? err.message : String(err)),
    );
  }, []);
  const withGateway = () => {
    setBusy(true);
    startOAuthSignIn().catch((err: unknown) => {
      setBusy(false);
      setOauthError(err instanceof Error ? err.message : String(err));
    });
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const { viewer } = await gql<{ viewer: { org: string; role: string } | null }>('{ viewer { org role } }', {}, key.trim());
      if (!viewer) throw new GraphQLFailure('that key is not signed in', 'UNAUTHENTICATED', 'key');
      onSignedIn({ credential: key.trim(), org: viewer.org, role: viewer.role });
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>adcp-gateway console</h1>
    <p><button type="button" onClick=${withGateway} disabled=${busy}>Sign in with the gateway</button></p>
    ${oauthError ? html`<p class="error" role="alert">${oauthError}</p>` : null}
    <p class="muted">Or paste an API key:</p>
    <form onSubmit=${submit}>
      <label for="api-key">API key</label>
      <input id="api-key" name="api-key" type="password" autocomplete="off" required value=${key} onInput=${(e: Event) => setKey((e.target as HTMLInputElement).value)} aria-describedby=${error ? 'signin-error' : undefined} aria-invalid=${error ? 'true' : undefined} />
      ${error ? html`<p id="signin-error" class="error" role="alert">${error}</p>` : null}
      <button type="submit" class="secondary" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in with the key'}</button>
    </form>
    <p class="muted">A key from <code>adcp-gateway keys create --org … --role buyer|seller</code>. It is kept for this tab only.</p>
  </main>`;
}

interface BuyRow {
  id: string;
  buyerRef: string;
  status: string;
  currency: string;
  totalBudget: number;
  startTime: string;
  endTime: string;
}

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

/** The buyer's media buys, live. */
export function Buys() {
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
    <p><a href="#/buys/new">New media buy</a></p>
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

interface Waiting {
  id: string;
  type: string;
  status: string;
  message: string;
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

/** The seller's approvals inbox, live. */
export function Approvals() {
  const { data, error, reload } = useQuery<{ approvals: Waiting[] }>(
    '{ approvals { id type status message mediaBuy { id buyerRef totalBudget currency packages { productId } } } }',
    {},
    { subscription: 'subscription { taskStatusChanged { position } }', variables: {} },
  );
  const [acting, setActing] = useState<string | undefined>();
  const [actionError, setActionError] = useState<string | undefined>();
  const act = async (task: Waiting, approve: boolean) => {
    setActing(task.id);
    setActionError(undefined);
    try {
      if (approve) await gql('mutation($t: ID!) { approveTask(taskId: $t) }', { t: task.id });
      else await gql('mutation($t: ID!, $r: String!) { rejectTask(taskId: $t, reason: $r) }', { t: task.id, r: 'Rejected in the console' });
      reload();
    } catch (err) {
      setActionError(err instanceof Error ? err.message : String(err));
    } finally {
      setActing(undefined);
    }
  };
  if (error && !data) return html`<${Failure} error=${error} />`;
  if (!data) return html`<${Loading} />`;
  return html`<section aria-labelledby="approvals-title">
    <h2 id="approvals-title">Approvals</h2>
    ${actionError ? html`<${Failure} error=${actionError} />` : null}
    <${AdvanceClock} />
    ${data.approvals.length === 0
      ? html`<p class="muted">Nothing waits for you.</p>`
      : html`<ul class="cards">
          ${data.approvals.map(
            (t) => html`<li class="card" data-task=${t.id}>
              <h3>${t.mediaBuy ? t.mediaBuy.buyerRef : t.type}</h3>
              <p>${t.type} · <span class="status" data-status=${t.status}>${t.status}</span></p>
              ${t.mediaBuy ? html`<p>${money(t.mediaBuy.totalBudget, t.mediaBuy.currency)} · ${t.mediaBuy.packages.map((p) => p.productId).join(', ')}</p>` : null}
              <p class="muted">${t.message}</p>
              <div class="actions">
                <button type="button" disabled=${acting === t.id} onClick=${() => act(t, true)}>Approve</button>
                <button type="button" class="secondary" disabled=${acting === t.id} onClick=${() => act(t, false)}>Reject</button>
              </div>
            </li>`,
          )}
        </ul>`}
  </section>`;
}
