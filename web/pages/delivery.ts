import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { gql } from '../api.js';
import { describedBy, Field, useForm } from '../form.js';
import { Failure, Loading, money, useQuery } from '../ui.js';

/** What the delivery section needs to know of its buy. */
export interface DeliveredBuy {
  id: string;
  status: string;
  currency: string;
  totalBudget: number;
  startTime: string;
  endTime: string;
  packages: { id: string; productId: string; budget: number }[];
}

interface Metrics {
  impressions: number;
  clicks: number;
  spend: number;
}
type Point = Metrics & { start: string };
interface DeliveryData {
  clock: string;
  mediaBuy: null | { delivery: { totals: Metrics; byPackage: (Metrics & { packageId: string })[]; series: Point[] } };
}

type Granularity = 'HOURLY' | 'DAILY';
type Metric = 'impressions' | 'spend';

const DELIVERY = `query($id: ID!, $g: DeliveryGranularity!) { clock mediaBuy(id: $id) { delivery(granularity: $g) {
  totals { impressions clicks spend }
  byPackage { packageId impressions clicks spend }
  series { start impressions clicks spend }
} } }`;

/** The statuses in which a buy spends, so its pace means something. */
const PACED = new Set(['active', 'paused', 'completed']);
const BUCKET_MS: Record<Granularity, number> = { HOURLY: 3_600_000, DAILY: 86_400_000 };
const when = (iso: string, g: Granularity) => (g === 'HOURLY' ? iso.replace('T', ' ').slice(0, 16) : iso.slice(0, 10));
const percent = (part: number, whole: number) => (whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0);

/** A choice of a few values as radio buttons (keyboard: arrows move within the group). */
function Choice<T extends string>({ legend, name, value, options, onChange }: { legend: string; name: string; value: T; options: [T, string][]; onChange: (v: T) => void }) {
  return html`<fieldset class="choice">
    <legend>${legend}</legend>
    ${options.map(([v, label]) => html`<label class="check"><input type="radio" name=${name} value=${v} checked=${value === v} onChange=${() => onChange(v)} /> ${label}</label>`)}
  </fieldset>`;
}

/**
 * A buy's delivery, live: impressions or spend per hour or day, spend against an even pacing of
 * the budget over the flight, and per package; sellers may restate a recorded hour from here.
 */
export function BuyDelivery({ buy, operator }: { buy: DeliveredBuy; operator: boolean }) {
  const [granularity, setGranularity] = useState<Granularity>('HOURLY');
  const [metric, setMetric] = useState<Metric>('impressions');
  const { data, error, reload } = useQuery<DeliveryData>(
    DELIVERY,
    { id: buy.id, g: granularity },
    { subscription: 'subscription($ids: [String!]) { deliveryUpdated(mediaBuyIds: $ids) { position } }', variables: { ids: [buy.id] } },
  );
  if (error && !data) return html`<${Failure} error=${error} />`;
  if (!data?.mediaBuy) return html`<${Loading} />`;
  const { totals, byPackage, series } = data.mediaBuy.delivery;
  return html`<div class="delivery">
    <div class="chart-controls">
      <${Choice} legend="Buckets" name="granularity" value=${granularity} options=${[['HOURLY', 'Hourly'], ['DAILY', 'Daily']]} onChange=${setGranularity} />
      <${Choice} legend="Show" name="metric" value=${metric} options=${[['impressions', 'Impressions'], ['spend', 'Spend']]} onChange=${setMetric} />
    </div>
    ${error ? html`<${Failure} error=${error} />` : null}
    <${Bars} series=${series} totals=${totals} metric=${metric} granularity=${granularity} currency=${buy.currency} />
    <${Pacing} buy=${buy} series=${series} granularity=${granularity} clock=${data.clock} spent=${totals.spend} />
    <div class="scroll"><table class="packages-delivery">
      <caption>Per package</caption>
      <thead><tr><th scope="col">Package</th><th scope="col">Impressions</th><th scope="col">Clicks</th><th scope="col">Spend</th><th scope="col">Of its budget</th></tr></thead>
      <tbody>
        ${buy.packages.map((p) => {
          const d = byPackage.find((x) => x.packageId === p.id) ?? { impressions: 0, clicks: 0, spend: 0 };
          return html`<tr data-package=${p.id}><th scope="row">${p.productId}</th><td>${d.impressions.toLocaleString('en')}</td><td>${d.clicks.toLocaleString('en')}</td><td>${money(d.spend, buy.currency)}</td><td>${percent(d.spend, p.budget)} %</td></tr>`;
        })}
      </tbody>
    </table></div>
    ${series.length
      ? html`<details class="numbers">
          <summary>The numbers, ${granularity === 'HOURLY' ? 'hour by hour' : 'day by day'}</summary>
          <table>
            <thead><tr><th scope="col">${granularity === 'HOURLY' ? 'Hour (UTC)' : 'Day (UTC)'}</th><th scope="col">Impressions</th><th scope="col">Clicks</th><th scope="col">Spend</th></tr></thead>
            <tbody>${series.map((p) => html`<tr><th scope="row">${when(p.start, granularity)}</th><td>${p.impressions}</td><td>${p.clicks}</td><td>${money(p.spend, buy.currency)}</td></tr>`)}</tbody>
          </table>
        </details>`
      : null}
    ${operator && series.length ? html`<${AdjustDelivery} buy=${buy} onAdjusted=${reload} />` : null}
  </div>`;
}

/** One bar per bucket of the chosen measure; every bar carries both measures for those who read the page by program. */
function Bars({ series, totals, metric, granularity, currency }: { series: Point[]; totals: Metrics; metric: Metric; granularity: Granularity; currency: string }) {
  if (series.length === 0) return html`<p class="muted">No delivery recorded yet.</p>`;
  const max = Math.max(...series.map((p) => p[metric]), metric === 'spend' ? 0.01 : 1);
  const width = 40 * series.length;
  const label = `${metric === 'spend' ? 'Spend' : 'Impressions'} per ${granularity === 'HOURLY' ? 'hour' : 'day'}`;
  const total = metric === 'spend' ? money(totals.spend, currency) : `${totals.impressions.toLocaleString('en')} impressions`;
  return html`<figure class="chart bars" data-total-impressions=${totals.impressions} data-total-spend=${totals.spend}>
    <svg role="img" aria-labelledby="chart-title" viewBox=${`0 0 ${width} 120`} preserveAspectRatio="none">
      <title id="chart-title">${label}: ${total} in all</title>
      ${series.map((p, i) => {
        const h = Math.round((p[metric] / max) * 110);
        return html`<rect class="bar" data-start=${p.start} data-impressions=${p.impressions} data-spend=${p.spend} x=${i * 40 + 4} y=${120 - h} width="32" height=${h}><title>${when(p.start, granularity)}: ${metric === 'spend' ? money(p.spend, currency) : p.impressions}</title></rect>`;
      })}
    </svg>
    <figcaption>${label} · ${totals.impressions.toLocaleString('en')} impressions, ${totals.clicks.toLocaleString('en')} clicks, ${money(totals.spend, currency)} spent</figcaption>
  </figure>`;
}

/**
 * Spend so far against an even spend of the budget over the flight: the cumulative spend at the
 * end of each bucket, the even line from nothing at the start to the budget at the end, and the
 * gateway's clock (which a demo may have moved on).
 */
function Pacing({ buy, series, granularity, clock, spent }: { buy: DeliveredBuy; series: Point[]; granularity: Granularity; clock: string; spent: number }) {
  const start = Date.parse(buy.startTime);
  const end = Date.parse(buy.endTime);
  const now = Math.min(Math.max(Date.parse(clock), start), end);
  const flight = Math.max(end - start, 1);
  const elapsed = (now - start) / flight;
  const expected = buy.totalBudget * elapsed;
  const pace = expected > 0 ? spent / expected : 0;
  const verdict = !PACED.has(buy.status) ? `the buy is ${buy.status}` : elapsed < 0.01 ? 'the flight has just started' : pace > 1.1 ? 'ahead of an even pace' : pace < 0.9 ? 'behind an even pace' : 'on an even pace';
  const W = 400;
  const H = 120;
  const x = (t: number) => Math.round(((Math.min(Math.max(t, start), end) - start) / flight) * W * 10) / 10;
  const y = (amount: number) => Math.round((H - (Math.min(amount, buy.totalBudget * 1.2) / (buy.totalBudget * 1.2)) * H) * 10) / 10;
  let cumulative = 0;
  const points = [`${x(start)},${y(0)}`, ...series.map((p) => `${x(Date.parse(p.start) + BUCKET_MS[granularity])},${y((cumulative += p.spend))}`)];
  return html`<figure class="chart pacing" data-spent=${spent} data-expected=${Math.round(expected * 100) / 100} data-pace=${Math.round(pace * 100) / 100}>
    <svg role="img" aria-labelledby="pacing-title" viewBox=${`0 0 ${W} ${H}`} preserveAspectRatio="none">
      <title id="pacing-title">Spend against an even pace of the budget over the flight</title>
      <line class="budget" x1="0" y1=${y(buy.totalBudget)} x2=${W} y2=${y(buy.totalBudget)} />
      <line class="even" x1=${x(start)} y1=${y(0)} x2=${x(end)} y2=${y(buy.totalBudget)} />
      <polyline class="spent" points=${points.join(' ')} />
      <line class="now" x1=${x(now)} y1="0" x2=${x(now)} y2=${H} />
    </svg>
    <figcaption>Spent ${money(spent, buy.currency)} of ${money(buy.totalBudget, buy.currency)} (${percent(spent, buy.totalBudget)} %) with ${Math.round(elapsed * 1000) / 10} % of the flight gone: ${verdict}.
      <span class="legend"><span class="key spent">spend</span> <span class="key even">even pace</span> <span class="key budget">budget</span> <span class="key now">now</span></span></figcaption>
  </figure>`;
}

/** Sellers: restate one recorded hour of a package (late data from the ad server); errors show at their field. */
function AdjustDelivery({ buy, onAdjusted }: { buy: DeliveredBuy; onAdjusted: () => void }) {
  const hours = useQuery<DeliveryData>(DELIVERY, { id: buy.id, g: 'HOURLY' });
  const form = useForm({ packageId: buy.packages[0]?.id ?? '', hourStart: '', impressions: '', clicks: '0', spend: '', reason: '' });
  const { values, errors, set } = form;
  const recorded = hours.data?.mediaBuy?.delivery.series ?? [];
  const submit = form.onSubmit(
    async () => {
      const input = { mediaBuyId: buy.id, packageId: values.packageId, hourStart: values.hourStart, impressions: Number(values.impressions), clicks: Number(values.clicks), spend: Number(values.spend), reason: values.reason };
      const { adjustDelivery } = await gql<{ adjustDelivery: { hour: Metrics; previous: Metrics } }>('mutation($i: DeliveryAdjustmentInput!) { adjustDelivery(input: $i) { hour { impressions spend } previous { impressions spend } } }', { i: input });
      onAdjusted();
      return `Restated: ${adjustDelivery.previous.impressions} → ${adjustDelivery.hour.impressions} impressions, ${money(adjustDelivery.previous.spend, buy.currency)} → ${money(adjustDelivery.hour.spend, buy.currency)}.`;
    },
    (field) => (field && field in values ? field : undefined),
  );
  const field = (name: keyof typeof values, label: string, input: unknown) => html`<${Field} id=${`adjust-${name}`} label=${label} errors=${errors} name=${name}>${input}<//>`;
  const described = (name: keyof typeof values) => describedBy(`adjust-${name}`, errors, name);
  return html`<form class="adjust" onSubmit=${submit} noValidate aria-labelledby="adjust-title">
    <h4 id="adjust-title">Restate an hour (late data from the ad server)</h4>
    ${field('packageId', 'Package', html`<select ...${described('packageId')} value=${values.packageId} onChange=${set('packageId')}>${buy.packages.map((p) => html`<option value=${p.id}>${p.productId}</option>`)}</select>`)}
    ${field('hourStart', 'Hour (UTC)', html`<select ...${described('hourStart')} value=${values.hourStart} onChange=${set('hourStart')}>
      <option value="">Choose a recorded hour…</option>
      ${recorded.map((p) => html`<option value=${p.start}>${when(p.start, 'HOURLY')}</option>`)}
    </select>`)}
    ${field('impressions', 'Impressions', html`<input ...${described('impressions')} type="number" inputmode="numeric" value=${values.impressions} onInput=${set('impressions')} />`)}
    ${field('clicks', 'Clicks', html`<input ...${described('clicks')} type="number" inputmode="numeric" value=${values.clicks} onInput=${set('clicks')} />`)}
    ${field('spend', `Spend (${buy.currency})`, html`<input ...${described('spend')} type="number" inputmode="decimal" step="0.01" value=${values.spend} onInput=${set('spend')} />`)}
    ${field('reason', 'Reason', html`<input ...${described('reason')} value=${values.reason} onInput=${set('reason')} />`)}
    ${errors.form ? html`<${Failure} error=${errors.form} />` : null}
    ${form.done ? html`<p role="status">${form.done}</p>` : null}
    <button type="submit" disabled=${form.busy}>${form.busy ? 'Restating…' : 'Restate the hour'}</button>
  </form>`;
}
