import type { Logger } from 'pino';
import { webhookQueries } from '../../projections/webhooks';
import { loadState } from '../application/command-handler';
import { LRUCache } from 'lru-cache';
import { webhookDecider, type WebhookEvent, type WebhookState } from '../domain/webhook/webhook';
import { ConcurrencyError, type EventStore } from '../eventstore/port';
import type { ProjectionRunner } from '../projections/runner';
import type { ReadModelStore } from '../readmodel/port';
import type { SigningKeystore } from '../signing/keystore';
import { hmacHeaders } from '../signing/legacy-hmac';
import { signWebhook } from '../signing/webhook-signer';
import type { AttemptClaims } from './attempt-claims';
import type { WebhookPoster } from './http-poster';
import { eventContext, inSpan } from '../shared/tracing';

export interface DeliveryWorkerDeps {
  store: EventStore;
  readModels: ReadModelStore;
  projections: ProjectionRunner;
  keys: SigningKeystore;
  poster: WebhookPoster;
  /** Which instance makes each attempt, when several share the database. */
  claims: AttemptClaims;
  log: Pick<Logger, 'warn' | 'error'>;
  /** Attempts in flight at once. */
  concurrency?: number;
  /** Upper bound on the wait between two looks at the due queue. */
  pollMs?: number;
}

type Scheduled = Extract<WebhookEvent, { type: 'WebhookScheduled' }>['data'];

/** The headers that authenticate one attempt: a fresh RFC 9421 signature each time, or a legacy scheme. */
export function authHeaders(s: Scheduled, body: Buffer, keys: SigningKeystore): Record<string, string> {
  switch (s.auth.scheme) {
    case 'rfc9421':
      return signWebhook({ url: s.url, body }, keys.activeKey(s.auth.key_use)).headers;
    case 'hmac-sha256':
      return { 'Content-Type': 'application/json', ...hmacHeaders(s.auth.secret, body) };
    case 'bearer':
      return { 'Content-Type': 'application/json', Authorization: `Bearer ${s.auth.token}` };
  }
}

/**
 * Sends due webhook attempts. The queue is the `webhooks` read model, shared by the instances;
 * before it POSTs, an instance claims the attempt (AttemptClaims), so each attempt is made by one
 * instance, and by another only if the first died in the middle of it. Each outcome is appended
 * to the delivery's stream at the version it read, so an outcome is recorded once. A crash
 * between POST and append repeats that attempt (at-least-once; receivers dedupe by
 * idempotency_key).
 *
 * The state of recently seen deliveries is kept in memory (from the events this instance
 * appended or its projections applied), which spares a stream read per attempt and lets the
 * worker skip queue rows the read model has not caught up on; the expected version on append
 * keeps that cache honest (a conflict drops the entry and the stream is read again).
 */
export class WebhookDeliveryWorker {
  private timer?: NodeJS.Timeout;
  private immediate?: NodeJS.Immediate;
  private timerAt = Infinity;
  private inFlight = new Map<string, Promise<void>>();
  /** `trace`: the scheduling event's metadata when it carries a trace, which each attempt continues. */
  private known = new LRUCache<string, { state: WebhookState; version: number; trace?: Record<string, unknown> }>({ max: 20_000 });
  /**
   * Due stream ids, oldest first, taken as slots free up: new fires straight from the events this
   * instance's projections apply, retries and anything left by a restart from the queue.
   */
  private backlog = new Set<string>();
  /** The highest log position this worker has looked at for new fires (nothing before start). */
  private seenUpTo = Number.MAX_SAFE_INTEGER;
  /** Look at the queue again: at start, after a full page, and every poll interval. */
  private refresh = true;
  private queriedAt = 0;
  private stopped = false;
  private ticking = false;
  private tickAgain = false;
  private readonly concurrency: number;
  private readonly pollMs: number;

  constructor(private readonly deps: DeliveryWorkerDeps) {
    this.concurrency = deps.concurrency ?? 32;
    this.pollMs = deps.pollMs ?? 500;
    deps.projections.onApplied((events) => {
      let scheduled = false;
      for (const e of events) {
        // Only fires scheduled after this worker started, seen for the first time: a projection
        // replaying the log (a rebuild, a restart from its checkpoint) shows old fires again, and
        // those may long be delivered. The queue query finds whatever is really still pending.
        if (e.position <= this.seenUpTo) continue;
        this.seenUpTo = e.position;
        if (e.type !== 'WebhookScheduled' || e.streamVersion !== 1 || this.known.has(e.streamId)) continue;
        scheduled = true;
        // A new fire is due now: queue it without asking the read model (the row is there too,
        // for other instances and restarts; whoever records the attempt first wins).
        this.known.set(e.streamId, { state: webhookDecider.evolve(webhookDecider.initialState(), e as unknown as WebhookEvent), version: 1, ...traceOf(e.metadata) });
        this.backlog.add(e.streamId);
      }
      if (scheduled) this.pump();
    });
  }

  /** Starts from the log head as it is now: older fires come from the queue, newer from the projections. */
  async start(): Promise<void> {
    this.seenUpTo = await this.deps.store.headPosition();
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    await Promise.allSettled(this.inFlight.values());
    this.deps.poster.close();
  }

  /** Runs a tick in `ms` unless one is already due sooner (0: on the next turn of the loop). */
  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.ticking) {
      if (ms === 0) this.tickAgain = true;
      return;
    }
    if (ms === 0) {
      // setTimeout(0) waits at least a millisecond; a refill should not.
      this.immediate ??= setImmediate(() => {
        this.immediate = undefined;
        void this.tick();
      });
      return;
    }
    const at = Date.now() + ms;
    if (this.timer && at >= this.timerAt) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      void this.tick();
    }, ms);
  }

  private isDue(streamId: string, now: number): boolean {
    const k = this.known.get(streamId);
    if (!k) return true; // unknown here: the stream will tell
    return k.state.state === 'pending' && (!k.state.nextAttemptAt || Date.parse(k.state.nextAttemptAt) <= now);
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.ticking) return;
    this.ticking = true;
    this.tickAgain = false;
    try {
      const now = Date.now();
      const stale = this.refresh || now - this.queriedAt >= this.pollMs;
      if (this.inFlight.size < this.concurrency && stale) {
        this.queriedAt = now;
        // Rows the read model still shows as due though this instance knows better are skipped,
        // so ask for enough to fill every free slot past them.
        const limit = this.concurrency * 4;
        const due = await webhookQueries.due(this.deps.readModels, new Date(now).toISOString(), limit);
        for (const r of due) this.backlog.add(r.stream_id);
        // A full page may leave more due rows behind: look again once this one is worked off.
        this.refresh = due.length === limit;
      }
      this.pump();
    } catch (err) {
      this.deps.log.warn({ err }, 'webhook queue read failed; retrying');
    } finally {
      this.ticking = false;
      this.schedule(this.tickAgain ? 0 : this.pollMs);
    }
  }

  /** Starts attempts from the backlog while slots are free; a finished attempt pumps again. */
  private pump(): void {
    const now = Date.now();
    for (const streamId of this.backlog) {
      if (this.stopped || this.inFlight.size >= this.concurrency) break;
      this.backlog.delete(streamId);
      if (this.inFlight.has(streamId) || !this.isDue(streamId, now)) continue;
      const p = this.attempt(streamId)
        .catch((err: unknown) => this.deps.log.error({ err, stream: streamId }, 'webhook attempt failed to record; will retry'))
        .finally(() => {
          this.inFlight.delete(streamId);
          this.pump();
          if (this.backlog.size === 0 && this.refresh) this.schedule(0);
        });
      this.inFlight.set(streamId, p);
    }
  }

  private async attempt(streamId: string): Promise<void> {
    let cached = this.known.get(streamId);
    if (!cached) {
      const { state, history } = await loadState(this.deps.store, streamId, webhookDecider);
      cached = { state, version: history.length, ...traceOf(history[0]?.metadata) };
      this.known.set(streamId, cached);
    }
    const { state, version, trace } = cached;
    // The queue is a read model and may lag the stream: the stream decides whether it is due.
    if (state.state !== 'pending' || (state.nextAttemptAt && Date.parse(state.nextAttemptAt) > Date.now())) return;
    if (!(await this.deps.claims.claim(streamId, version))) {
      // Another instance is making this attempt; what it records is read afresh next time.
      this.known.delete(streamId);
      return;
    }
    // Claimed; but the instance whose claim expired may have recorded the attempt before dying.
    if ((await this.deps.store.readStream(streamId, { fromVersion: version + 1, limit: 1 })).length > 0) {
      this.known.delete(streamId);
      return;
    }
    // The attempt continues the trace of the command whose change scheduled the delivery.
    await inSpan('webhook attempt', { parent: eventContext(trace), attributes: { 'adcp.stream_id': streamId, 'adcp.webhook.attempt': (state.attempts ?? 0) + 1 } }, async () => {
      const body = Buffer.from(state.scheduled.body);
      const startedAt = new Date().toISOString();
      const outcome = await this.deps.poster.post(state.scheduled.url, authHeaders(state.scheduled, body, this.deps.keys), body);
      const now = new Date().toISOString();
      const events = webhookDecider.decide({ type: 'RecordAttempt', outcome, startedAt, now, jitter: Math.random() }, state);
      try {
        await this.deps.store.append(streamId, events.map((e) => ({ type: e.type, data: e.data, metadata: { time: now, principal: 'webhook-worker' } })), {
          expectedVersion: version,
        });
        const next = events.reduce<WebhookState>((s, e) => webhookDecider.evolve(s, e), state);
        this.known.set(streamId, { state: next, version: version + events.length, ...(trace ? { trace } : {}) });
        if (next.state !== 'pending') await this.deps.claims.finished(streamId);
      } catch (err) {
        this.known.delete(streamId);
        if (!(err instanceof ConcurrencyError)) throw err; // another instance recorded this attempt
      }
    });
  }
}

/** The trace an event's metadata carries, kept beside the delivery's state (nothing when it carries none). */
function traceOf(metadata: Record<string, unknown> | undefined): { trace?: Record<string, unknown> } {
  return typeof metadata?.traceparent === 'string' ? { trace: { traceparent: metadata.traceparent, ...(typeof metadata.tracestate === 'string' ? { tracestate: metadata.tracestate } : {}) } } : {};
}
