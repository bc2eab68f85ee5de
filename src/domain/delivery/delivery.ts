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

export type DeliveryEvent = {
  readonly type: 'DeliveryRecorded';
  readonly data: { readonly media_buy_id: string; readonly owner: string; readonly currency: string; readonly hours: readonly HourDelivery[]; readonly through: string };
};

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
