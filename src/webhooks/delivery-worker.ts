import type { Logger } from 'pino';
import { webhookQueries } from '../../projections/webhooks';
import { loadState } from '../application/command-handler';
import { webhookDecider, type WebhookEvent } from '../domain/webhook/webhook';
import { ConcurrencyError, type EventStore } from '../eventstore/port';
import type { ProjectionRunner } from '../projections/runner';
import type { ReadModelStore } from '../readmodel/port';
import type { SigningKeystore } from '../signing/keystore';
import { hmacHeaders } from '../signing/legacy-hmac';
import { signWebhook } from '../signing/webhook-signer';
import type { WebhookPoster } from './http-poster';

export interface DeliveryWorkerDeps {
  store: EventStore;
  readModels: ReadModelStore;
  projections: ProjectionRunner;
  keys: SigningKeystore;
  poster: WebhookPoster;
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
      return signWebhook({ url: s.url, body }, keys.activeKey()).headers;
    case 'hmac-sha256':
      return { 'Content-Type': 'application/json', ...hmacHeaders(s.auth.secret, body) };
    case 'bearer':
      return { 'Content-Type': 'application/json', Authorization: `Bearer ${s.auth.token}` };
  }
}

/**
 * Sends due webhook attempts. The queue is the `webhooks` read model; each attempt's outcome is
 * appended to the delivery's stream at the version it read, so two instances racing on one
 * delivery record it once (and the receiver dedupes the at-most-one extra POST by
 * idempotency_key). A crash between POST and append repeats that attempt: at-least-once.
 */
export class WebhookDeliveryWorker {
  private timer?: NodeJS.Timeout;
  private inFlight = new Map<string, Promise<void>>();
  private stopped = false;
  private ticking = false;
  private readonly concurrency: number;
  private readonly pollMs: number;

  constructor(private readonly deps: DeliveryWorkerDeps) {
    this.concurrency = deps.concurrency ?? 32;
    this.pollMs = deps.pollMs ?? 500;
    deps.projections.onApplied((events) => {
      if (events.some((e) => e.type === 'WebhookScheduled' || e.type === 'WebhookAttempted')) this.schedule(0);
    });
  }

  start(): void {
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await Promise.allSettled(this.inFlight.values());
    this.deps.poster.close();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), ms);
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      const free = this.concurrency - this.inFlight.size;
      if (free > 0) {
        const due = await webhookQueries.due(this.deps.readModels, new Date().toISOString(), free + this.inFlight.size);
        for (const { stream_id } of due) {
          if (this.inFlight.size >= this.concurrency) break;
          if (this.inFlight.has(stream_id)) continue;
          const p = this.attempt(stream_id)
            .catch((err: unknown) => this.deps.log.error({ err, stream: stream_id }, 'webhook attempt failed to record; will retry'))
            .finally(() => {
              this.inFlight.delete(stream_id);
              this.schedule(0);
            });
          this.inFlight.set(stream_id, p);
        }
      }
    } catch (err) {
      this.deps.log.warn({ err }, 'webhook queue read failed; retrying');
    } finally {
      this.ticking = false;
      this.schedule(this.pollMs);
    }
  }

  private async attempt(streamId: string): Promise<void> {
    const { state, history } = await loadState(this.deps.store, streamId, webhookDecider);
    // The queue is a read model and may lag the stream: the stream decides whether it is due.
    if (state.state !== 'pending' || (state.nextAttemptAt && Date.parse(state.nextAttemptAt) > Date.now())) return;
    const body = Buffer.from(state.scheduled.body);
    const startedAt = new Date().toISOString();
    const outcome = await this.deps.poster.post(state.scheduled.url, authHeaders(state.scheduled, body, this.deps.keys), body);
    const now = new Date().toISOString();
    const events = webhookDecider.decide({ type: 'RecordAttempt', outcome, startedAt, now, jitter: Math.random() }, state);
    try {
      await this.deps.store.append(streamId, events.map((e) => ({ type: e.type, data: e.data, metadata: { time: now, principal: 'webhook-worker' } })), {
        expectedVersion: history.length,
      });
    } catch (err) {
      if (!(err instanceof ConcurrencyError)) throw err; // another instance recorded this attempt
    }
  }
}

