import { windowStartOf, type RateLimiter } from './rate-limit';

/** What a budget says about one request: admitted or not, and what the client has left. */
export interface BudgetVerdict {
  allowed: boolean;
  limit: number;
  /** Left in this window after this request (what was left, when refused). */
  remaining: number;
  /** Seconds until the window ends and the budget is whole again. */
  resetSeconds: number;
  windowSeconds: number;
}

interface Entry {
  /** Start (epoch seconds) of the window these counts are for. */
  window: number;
  windowSeconds: number;
  /** What every instance had spent in the window at the last exchange with the store (ours included). */
  spent: number;
  /** Spent here since that exchange. */
  pending: number;
  /** Spent here and on its way to the store (an exchange not yet answered). */
  inFlight: number;
  /** When the store last told us what all instances spent (ms). */
  exchangedAt: number;
  /** Used since the last exchange: worth an exchange, to learn what the other instances spent. */
  touched: boolean;
  /** An exchange that requests must wait for (the window's first, or one after the entry idled). */
  ready?: Promise<void>;
}

/**
 * Budgets per client and window (requests, GraphQL points) that every instance shares through the
 * rate-limit store, without a store round trip per request: each instance counts locally and hands
 * its count to the store every `syncMs`, or at once when it has spent a twentieth of the budget,
 * reading back what all instances spent (the way distributed rate limiters batch, e.g. Envoy's
 * global limits). A budget new in its window, or idle here for two intervals, is brought up to date
 * before it decides, so a client cannot start fresh on another instance; the instances together
 * may overshoot by about a twentieth of the budget each, plus what they admit during one exchange.
 *
 * A store that is down fails open: the budget is then enforced per instance (and logged), since
 * refusing every request over a counter outage would turn a protection into an outage.
 */
export class SharedBudgets {
  private readonly entries = new Map<string, Entry>();
  private timer?: NodeJS.Timeout;
  private flushing?: Promise<void>;

  constructor(
    private readonly store: RateLimiter,
    private readonly options: { syncMs: number; onError: (err: unknown) => void; now?: () => number },
  ) {}

  /**
   * Spends `cost` from the bucket's budget of `limit` per `windowSeconds` when it fits. Answers at
   * once (no promise) when the instance's view of the budget is fresh, which is nearly always: a
   * request's admission then costs a map lookup, not a turn of the event loop.
   */
  take(bucket: string, cost: number, limit: number, windowSeconds: number): BudgetVerdict | Promise<BudgetVerdict> {
    const now = this.now();
    const entry = this.entryFor(bucket, windowSeconds, now);
    return entry instanceof Promise ? entry.then((e) => this.decide(bucket, e, cost, limit, this.now())) : this.decide(bucket, entry, cost, limit, now);
  }

  /** Whether any of the budget is left (without spending it); at once when fresh, like take. */
  peek(bucket: string, limit: number, windowSeconds: number): BudgetVerdict | Promise<BudgetVerdict> {
    const now = this.now();
    const entry = this.entryFor(bucket, windowSeconds, now);
    return entry instanceof Promise ? entry.then((e) => this.verdict(e, limit, this.now())) : this.verdict(entry, limit, now);
  }

  /** Counts `cost` whatever is left (failures to count, which happened anyway). */
  spend(bucket: string, cost: number, windowSeconds: number): void | Promise<void> {
    const entry = this.entryFor(bucket, windowSeconds, this.now());
    if (!(entry instanceof Promise)) return this.spendLocally(bucket, entry, cost, Infinity);
    return entry.then((e) => this.spendLocally(bucket, e, cost, Infinity));
  }

  private decide(bucket: string, entry: Entry, cost: number, limit: number, now: number): BudgetVerdict {
    const verdict = this.verdict(entry, limit, now);
    if (!verdict.allowed || verdict.remaining < cost) {
      verdict.allowed = false;
      return verdict;
    }
    this.spendLocally(bucket, entry, cost, limit);
    verdict.remaining -= cost;
    return verdict;
  }

  private verdict(entry: Entry, limit: number, now: number): BudgetVerdict {
    const left = Math.max(0, limit - entry.spent - entry.pending - entry.inFlight);
    const resetSeconds = Math.max(1, entry.window + entry.windowSeconds - Math.floor(now / 1000));
    return { allowed: left > 0, limit, remaining: left, resetSeconds, windowSeconds: entry.windowSeconds };
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** The bucket's entry for the current window; a promise only while it is brought up to date. */
  private entryFor(bucket: string, windowSeconds: number, now: number): Entry | Promise<Entry> {
    const window = windowStartOf(windowSeconds, now);
    let entry = this.entries.get(bucket);
    if (!entry || entry.window !== window) {
      entry = { window, windowSeconds, spent: 0, pending: 0, inFlight: 0, exchangedAt: 0, touched: false };
      this.entries.set(bucket, entry);
    }
    // What this instance knows of the others is at most two sync intervals old: a budget idle
    // here (or new in this window) is brought up to date before it decides anything.
    if (!entry.ready && now - entry.exchangedAt > 2 * this.options.syncMs) {
      const stale = entry;
      stale.ready = this.exchange(bucket, stale).finally(() => {
        stale.ready = undefined;
      });
    }
    entry.touched = true;
    this.schedule();
    if (!entry.ready) return entry;
    const pending = entry;
    return entry.ready.then(() => pending);
  }

  /**
   * Spent here since the last exchange, past a twentieth of the budget, goes to the store now
   * rather than at the next interval: with small budgets the instances stay nearly exact.
   */
  private spendLocally(bucket: string, entry: Entry, cost: number, limit: number): void {
    entry.pending += cost;
    if (entry.pending >= Math.max(1, limit / 20)) void this.exchange(bucket, entry);
  }

  /** Adds what was spent here to the store and learns what all instances spent. Never throws. */
  private exchange(bucket: string, entry: Entry): Promise<void> {
    const points = entry.pending;
    entry.pending = 0;
    entry.inFlight += points;
    entry.touched = false;
    // Counted into the entry's own window, even when the exchange happens just after it.
    return this.store.add(bucket, points, entry.windowSeconds, entry.window * 1000).then(
      (total) => {
        entry.inFlight -= points;
        entry.spent = Math.max(entry.spent, total);
        entry.exchangedAt = this.options.now?.() ?? Date.now();
      },
      (err: unknown) => {
        entry.inFlight -= points;
        entry.pending += points;
        entry.touched = true;
        // Fail open, and do not wait on a store that is down before every request.
        entry.exchangedAt = this.options.now?.() ?? Date.now();
        this.options.onError(err);
      },
    );
  }

  private schedule(): void {
    if (this.timer || this.flushing) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined;
        if ([...this.entries.values()].some((e) => e.touched)) this.schedule();
      });
    }, this.options.syncMs);
    this.timer.unref();
  }

  /** Budgets held on this instance (each ends with its window). */
  get size(): number {
    return this.entries.size;
  }

  /** One exchange per touched bucket: add what was spent here, learn what all instances spent. */
  async flush(): Promise<void> {
    const now = this.options.now?.() ?? Date.now();
    const exchanges: Promise<void>[] = [];
    for (const [bucket, entry] of this.entries) {
      if (windowStartOf(entry.windowSeconds, now) !== entry.window && entry.pending === 0 && !entry.ready) {
        this.entries.delete(bucket);
        continue;
      }
      if (entry.touched && !entry.ready) exchanges.push(this.exchange(bucket, entry));
    }
    await Promise.all(exchanges);
  }

  /** Hands what was spent here to the store (at shutdown). */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flushing;
    await this.flush();
  }
}
