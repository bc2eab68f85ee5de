import type { Logger } from 'pino';
import type { Histogram } from 'prom-client';

/**
 * Notices when the event loop was blocked, and says by what. Node cannot interrupt a synchronous
 * loop, so the guards against costly input come before the work (DESIGN.md §3.16); this is how an
 * operator learns that one did not: a timer that should fire every `intervalMs` and fires late by
 * more than `thresholdMs` means the loop was held that long. The warning names the operation the
 * loop last started running (each request's first hook and each subscribe message say what they
 * are), and /metrics counts the stalls beside prom-client's `nodejs_eventloop_lag_*` (its
 * `monitorEventLoopDelay` histogram).
 */
/** A block of the event loop longer than this is reported. */
export const STALL_THRESHOLD_MS = 100;

export class LoopStalls {
  private current: (() => string) | undefined;
  private last = performance.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Pick<Logger, 'warn'>,
    /** `adcp_event_loop_stall_seconds`: each stall, by how long. */
    private readonly stalls: Histogram,
    private readonly thresholdMs = STALL_THRESHOLD_MS,
    private readonly intervalMs = 20,
  ) {}

  start(): void {
    if (this.timer) return;
    this.last = performance.now();
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * What the loop runs from now on (until the next call): cheap enough for every request, as the
   * description is only written when a stall is reported.
   */
  running(describe: () => string): void {
    this.current = describe;
  }

  private tick(): void {
    const now = performance.now();
    const late = now - this.last - this.intervalMs;
    this.last = now;
    if (late <= this.thresholdMs) return;
    this.stalls.observe(late / 1000);
    this.log.warn({ blockedMs: Math.round(late), operation: this.current?.() }, `the event loop was blocked for ${Math.round(late)} ms`);
  }
}
