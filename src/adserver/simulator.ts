import type { Logger } from 'pino';
import { catalogQueries } from '../../projections/catalog';
import { mediaBuyQueries } from '../../projections/media-buys';
import { handleCommand } from '../application/command-handler';
import { deliveryStream, foldDelivery, HOUR_MS, packageTotals, planHour, type HourDelivery } from '../domain/delivery/delivery';
import { mediaBuyDecider, mediaBuyStream } from '../domain/media-buy/media-buy';
import type { EventStore } from '../eventstore/port';
import type { ReadModelStore } from '../readmodel/port';
import { AppError } from '../shared/errors';
import type { AdServer } from './port';

/** At most a month of hours per buy per tick, so one event stays small. */
const MAX_HOURS_PER_TICK = 24 * 31;

/**
 * The built-in ad server: on every tick (once a minute, and after `advanceClock`) it records
 * each live buy's delivery for the whole hours elapsed since its last record, then completes the
 * buys whose flight has ended. The delivery stream of a buy is the simulator's own memory (what
 * was recorded through when, and what was spent), so a restart resumes exactly.
 */
export class DeliverySimulator implements AdServer {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private store: EventStore,
    private readModels: ReadModelStore,
    private now: () => Date,
    private log?: Logger,
    private intervalMs = 60_000,
  ) {}

  async start(): Promise<void> {
    this.timer = setInterval(() => void this.tick().catch((err: unknown) => this.log?.error({ err }, 'delivery tick failed')), this.intervalMs);
    this.timer.unref();
  }

  /** Serialised: a tick requested while one runs waits for it and then runs again. */
  tick(): Promise<void> {
    const previous = this.running ?? Promise.resolve();
    const next = previous.then(() => this.runTick());
    this.running = next.finally(() => {
      if (this.running === next) this.running = undefined;
    });
    return next;
  }

  private async runTick(): Promise<void> {
    const now = this.now().getTime();
    const hourNow = Math.floor(now / HOUR_MS) * HOUR_MS;
    const products = new Map((await catalogQueries.products(this.readModels)).map((p) => [p.product_id, p]));
    for await (const buy of mediaBuyQueries.live(this.readModels)) {
      // Sandbox buys deliver only what the compliance controller simulates (deterministic tests).
      if (buy.terms.sandbox) continue;
      const start = Date.parse(buy.terms.start_time);
      const end = Date.parse(buy.terms.end_time);
      const history = await this.store.readStream(deliveryStream(buy.media_buy_id));
      // Late restatements (DeliveryAdjusted) count: pacing goes on from what was really delivered.
      const recorded = foldDelivery(history);
      const through = Math.max(Math.floor(start / HOUR_MS) * HOUR_MS, recorded.through ?? 0);
      const spent = packageTotals(recorded);
      const until = Math.min(hourNow, Math.ceil(end / HOUR_MS) * HOUR_MS, through + MAX_HOURS_PER_TICK * HOUR_MS);
      if (until > through) {
        const hours: HourDelivery[] = [];
        // A paused buy moves its "through" mark without delivering.
        if (buy.status === 'active') {
          for (let h = through; h < until; h += HOUR_MS) {
            if (h + HOUR_MS <= start) continue;
            for (const pkg of buy.terms.packages) {
              if (pkg.paused || pkg.canceled) continue;
              const product = products.get(pkg.product_id);
              const s = spent.get(pkg.package_id) ?? { spend: 0, clicks: 0, impressions: 0 };
              const d = planHour({ pkg, dailyCapacity: product?.delivery.daily_impression_capacity ?? 0, ctr: product?.delivery.ctr ?? 0 }, { start, end }, h, s.spend, s.clicks, s.impressions);
              if (d.impressions === 0 && d.spend_cents === 0) continue;
              spent.set(pkg.package_id, { spend: s.spend + d.spend_cents, clicks: s.clicks + d.clicks, impressions: s.impressions + d.impressions });
              hours.push(d);
            }
          }
        }
        await this.store.append(
          deliveryStream(buy.media_buy_id),
          [{ type: 'DeliveryRecorded', data: { media_buy_id: buy.media_buy_id, owner: buy.owner, currency: buy.terms.currency, hours, through: new Date(until).toISOString() } }],
          { expectedVersion: history.length },
        );
      }
      if (now >= end) {
        const at = new Date(now).toISOString();
        await handleCommand(this.store, mediaBuyStream(buy.media_buy_id), mediaBuyDecider, { type: 'CompleteMediaBuy', now: at }, { now: at, principal: 'adserver' }).catch((err: unknown) => {
          if (!(err instanceof AppError && err.code === 'INVALID_STATE')) throw err;
        });
      }
    }
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => {});
  }
}
