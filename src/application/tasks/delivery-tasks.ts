import { z } from 'zod';
import { ownedBuy } from '../buy-ids';
import { deliveryQueries, type DeliveryRow } from '../../../projections/delivery';
import { AppError } from '../../shared/errors';
import { defineTask } from './context';

const day = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: 'must be a date (YYYY-MM-DD) or date-time' });

const input = z
  .object({
    media_buy_id: z.string().min(1).optional(),
    media_buy_ids: z.array(z.string().min(1)).min(1).max(100).optional(),
    granularity: z.enum(['hourly', 'daily']).optional(),
    time_granularity: z.enum(['hourly', 'daily']).optional(),
    date_range: z
      .object({ start: day, end: day })
      .passthrough()
      .refine((r) => Date.parse(r.start) <= Date.parse(r.end), { message: 'start must not be after end', path: ['start'] })
      .optional(),
  })
  .passthrough();

interface Metrics {
  impressions: number;
  clicks: number;
  spend: number;
  ctr: number;
}

/** Totals of recorded hours (spend from cents, so sums stay exact); the task's and the typed graph's. */
export function deliveryMetrics(rows: readonly DeliveryRow[]): Metrics {
  const impressions = rows.reduce((s, r) => s + r.impressions, 0);
  const clicks = rows.reduce((s, r) => s + r.clicks, 0);
  const cents = rows.reduce((s, r) => s + r.spend_cents, 0);
  return { impressions, clicks, spend: cents / 100, ctr: impressions ? Math.round((clicks / impressions) * 1e6) / 1e6 : 0 };
}

/** Recorded hours grouped into UTC hours or days, oldest first, each bucket's totals. */
export function deliverySeries(rows: readonly DeliveryRow[], granularity: 'hourly' | 'daily'): ({ start: string } & Metrics)[] {
  const bucket = (h: string) => (granularity === 'daily' ? `${h.slice(0, 10)}T00:00:00.000Z` : h);
  const groups = new Map<string, DeliveryRow[]>();
  for (const r of rows) groups.set(bucket(r.hour_start), [...(groups.get(bucket(r.hour_start)) ?? []), r]);
  return [...groups.entries()].map(([start, rs]) => ({ start, ...deliveryMetrics(rs) }));
}

/** A date-only bound covers that whole UTC day; date-times are taken as given. */
const bound = (s: string, endOfDay: boolean) => (/^\d{4}-\d{2}-\d{2}$/.test(s) ? new Date(Date.parse(s) + (endOfDay ? 86_400_000 : 0)) : new Date(s)).toISOString();

export const getMediaBuyDelivery = defineTask({
  description: 'Delivery totals, by package, and an hourly or daily series.',
  input: input,
  async run(i, ctx) {
    if (!i.media_buy_id && !i.media_buy_ids) throw new AppError('INVALID_REQUEST', 'media_buy_id or media_buy_ids is required', 'media_buy_id');
    const granularity = i.granularity ?? i.time_granularity;
    const ids = i.media_buy_ids ?? [i.media_buy_id!];
    const from = i.date_range ? bound(i.date_range.start, false) : undefined;
    const to = i.date_range ? bound(i.date_range.end, true) : undefined;
    const deliveries = [];
    for (const [n, id] of ids.entries()) {
      const buy = await ownedBuy(ctx, id);
      if (!buy) throw new AppError('MEDIA_BUY_NOT_FOUND', 'no media buy of yours has this media_buy_id', i.media_buy_ids ? `media_buy_ids[${n}]` : 'media_buy_id');
      const rows = await deliveryQueries.hours(ctx.ports.readModels, ctx.principal.org, buy.media_buy_id, from, to);
      const byPackage = buy.terms.packages.map((p) => ({
        package_id: p.package_id,
        ...deliveryMetrics(rows.filter((r) => r.package_id === p.package_id)),
        pricing_model: p.pricing_model,
        rate: p.rate,
        currency: p.currency,
        budget: p.budget,
        creative_ids: p.creative_ids,
      }));
      const timeseries = granularity ? deliverySeries(rows, granularity) : undefined;
      deliveries.push({
        media_buy_id: id,
        status: buy.status,
        // What the buy's AdCP 3.0 status is computed from, as get_media_buys has it (the flight,
        // the packages' creatives above, a pause, a sandbox-forced status): both answer one status.
        start_time: buy.terms.start_time,
        end_time: buy.terms.end_time,
        ...(Number(buy.activated) ? { activated: true } : {}),
        ...(buy.forced_status ? { forced_status: buy.forced_status } : {}),
        totals: deliveryMetrics(rows),
        by_package: byPackage,
        ...(timeseries ? { timeseries } : {}),
        currency: buy.terms.currency,
      });
    }
    const first = deliveries[0]!;
    const now = ctx.ports.clock().toISOString();
    // The period reported: the request's date_range when it names one (start ≤ end, checked above);
    // otherwise from the earliest flight start to now. A flight that has not started has delivered
    // nothing yet, and a period never ends before it starts (3.0 requires start and end, and
    // nothing lets them be reversed): then the period is empty, zero-length at now.
    const earliest = deliveries.map((d) => d.start_time).reduce((a, b) => (Date.parse(b) < Date.parse(a) ? b : a));
    return {
      reporting_period: { start: from ?? (Date.parse(earliest) < Date.parse(now) ? earliest : now), end: to ?? now },
      currency: first.currency,
      // The spec's shape for the (first) buy, and every buy in AdCP's media_buy_deliveries.
      delivery: first.totals,
      by_package: first.by_package,
      ...(first.timeseries ? { timeseries: first.timeseries } : {}),
      media_buy_deliveries: deliveries,
    };
  },
});
