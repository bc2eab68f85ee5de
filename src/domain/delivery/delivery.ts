import { AppError } from '../../shared/errors';
import type { PackageTerms } from '../media-buy/media-buy';

export const HOUR_MS = 3_600_000;

/** One package's delivery in one hour. Spend is in cents so totals add up exactly. */
export interface HourDelivery {
  readonly package_id: string;
  readonly hour_start: string;
  readonly impressions: number;
  readonly clicks: number;
  readonly spend_cents: number;
}

/**
 * A buy's delivery stream: what the ad server recorded hour by hour, corrections that arrived
 * late (an hour already recorded, restated), and notices that data is running late.
 */
export type DeliveryEvent =
  | {
      readonly type: 'DeliveryRecorded';
      readonly data: { readonly media_buy_id: string; readonly owner: string; readonly currency: string; readonly hours: readonly HourDelivery[]; readonly through: string };
    }
  | {
      readonly type: 'DeliveryAdjusted';
      readonly data: { readonly media_buy_id: string; readonly owner: string; readonly hour: HourDelivery; readonly previous: HourDelivery; readonly reason: string; readonly at: string };
    }
  | {
      readonly type: 'DeliveryDelayed';
      readonly data: { readonly media_buy_id: string; readonly owner: string; readonly expected_availability: string; readonly reason: string; readonly at: string };
    };

export interface DeliveryState {
  /** Every recorded hour (as last restated), keyed `package_id|hour_start`. */
  readonly hours: ReadonlyMap<string, HourDelivery>;
  /** Recorded through this instant (ms); the flight's first hour before any record. */
  readonly through?: number;
}

export const hourKey = (packageId: string, hourStart: string) => `${packageId}|${hourStart}`;

/** Folds a delivery stream. */
export function foldDelivery(events: readonly { type: string; data: unknown }[]): DeliveryState {
  const hours = new Map<string, HourDelivery>();
  let through: number | undefined;
  for (const e of events) {
    const ev = e as DeliveryEvent;
    if (ev.type === 'DeliveryRecorded') {
      for (const h of ev.data.hours) hours.set(hourKey(h.package_id, h.hour_start), h);
      through = Math.max(through ?? 0, Date.parse(ev.data.through));
    } else if (ev.type === 'DeliveryAdjusted') {
      hours.set(hourKey(ev.data.hour.package_id, ev.data.hour.hour_start), ev.data.hour);
    }
  }
  return { hours, through };
}

/** Per-package sums over the folded hours (what pacing and budgets are checked against). */
export function packageTotals(state: DeliveryState): Map<string, { spend: number; clicks: number; impressions: number }> {
  const out = new Map<string, { spend: number; clicks: number; impressions: number }>();
  for (const h of state.hours.values()) {
    const s = out.get(h.package_id) ?? { spend: 0, clicks: 0, impressions: 0 };
    out.set(h.package_id, { spend: s.spend + h.spend_cents, clicks: s.clicks + h.clicks, impressions: s.impressions + h.impressions });
  }
  return out;
}

/**
 * A late restatement of one recorded hour (the ad server's numbers changed after the report went
 * out: invalid-traffic filtering, a reconciliation). Only an hour already recorded can change,
 * counts are whole and non-negative, and the package may not end up over its budget.
 */
export function decideAdjustment(
  state: DeliveryState,
  buy: { media_buy_id: string; owner: string; packages: readonly PackageTerms[] },
  input: { package_id: string; hour_start: string; impressions: number; clicks: number; spend_cents: number; reason: string; now: string },
): Extract<DeliveryEvent, { type: 'DeliveryAdjusted' }> {
  const pkg = buy.packages.find((p) => p.package_id === input.package_id);
  if (!pkg) throw new AppError('NOT_FOUND', `media buy ${buy.media_buy_id} has no package ${input.package_id}`, 'package_id');
  const hourStart = Date.parse(input.hour_start);
  if (Number.isNaN(hourStart) || hourStart % HOUR_MS !== 0) throw new AppError('VALIDATION_ERROR', 'hour_start must be a whole UTC hour', 'hour_start');
  const iso = new Date(hourStart).toISOString();
  const previous = state.hours.get(hourKey(input.package_id, iso));
  if (!previous) throw new AppError('NOT_FOUND', `no delivery was recorded for package ${input.package_id} in the hour starting ${iso}`, 'hour_start');
  for (const field of ['impressions', 'clicks', 'spend_cents'] as const) {
    if (!Number.isInteger(input[field]) || input[field] < 0) throw new AppError('VALIDATION_ERROR', `${field} must be a whole number ≥ 0`, field === 'spend_cents' ? 'spend' : field);
  }
  if (input.clicks > input.impressions) throw new AppError('VALIDATION_ERROR', 'clicks cannot exceed impressions', 'clicks');
  const spent = (packageTotals(state).get(input.package_id)?.spend ?? 0) - previous.spend_cents + input.spend_cents;
  if (spent > Math.round(pkg.budget * 100)) throw new AppError('VALIDATION_ERROR', `the package would spend ${spent / 100}, over its budget of ${pkg.budget}`, 'spend');
  if (!input.reason.trim()) throw new AppError('VALIDATION_ERROR', 'reason is required', 'reason');
  const hour: HourDelivery = { package_id: input.package_id, hour_start: iso, impressions: input.impressions, clicks: input.clicks, spend_cents: input.spend_cents };
  return { type: 'DeliveryAdjusted', data: { media_buy_id: buy.media_buy_id, owner: buy.owner, hour, previous, reason: input.reason.trim(), at: input.now } };
}

export const deliveryStream = (mediaBuyId: string) => `delivery-${mediaBuyId}`;

export interface PackagePlan {
  readonly pkg: PackageTerms;
  /** The product's daily impression capacity and click-through rate (from the catalog). */
  readonly dailyCapacity: number;
  readonly ctr: number;
}

/**
 * The built-in ad server's pacing, pure: even delivery over the flight, limited by the product's
 * hourly capacity, never past the package budget. CPM-style packages buy impressions at their
 * rate; a flat fee accrues evenly over the flight. Clicks follow the product's CTR with the
 * fraction carried forward, so totals do not drift from rounding.
 */
export function planHour(
  plan: PackagePlan,
  flight: { start: number; end: number },
  hourStart: number,
  spentCents: number,
  clicksSoFar: number,
  impressionsSoFar: number,
): HourDelivery {
  const { pkg } = plan;
  const budgetCents = Math.round(pkg.budget * 100);
  const hours = Math.max(1, Math.ceil((flight.end - flight.start) / HOUR_MS));
  const capacity = Math.floor(plan.dailyCapacity / 24);
  let impressions: number;
  let spend: number;
  if (pkg.pricing_model === 'flat-fee') {
    const fee = Math.min(budgetCents, Math.round(pkg.rate * 100));
    spend = Math.min(Math.round(fee / hours), budgetCents - spentCents);
    impressions = spend > 0 ? capacity : 0;
  } else {
    const totalImpressions = Math.floor((pkg.budget / pkg.rate) * 1000);
    const perHour = Math.ceil(totalImpressions / hours);
    const affordable = Math.floor(((budgetCents - spentCents) / 100 / pkg.rate) * 1000);
    impressions = Math.max(0, Math.min(capacity, perHour, affordable));
    spend = Math.min(budgetCents - spentCents, Math.round((impressions * pkg.rate) / 10));
  }
  const clicks = Math.max(0, Math.floor((impressionsSoFar + impressions) * plan.ctr) - clicksSoFar);
  return { package_id: pkg.package_id, hour_start: new Date(hourStart).toISOString(), impressions, clicks, spend_cents: Math.max(0, spend) };
}
