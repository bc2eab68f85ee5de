import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';

/**
 * How an attempt authenticates. RFC 9421 signs with the seller's key for `key_use`: the spec's
 * `request-signing` by default, `webhook-signing` for AdCP 3.0 receivers (which accept only that).
 */
export type WebhookAuth = { scheme: 'rfc9421'; key_use?: 'webhook-signing' } | { scheme: 'hmac-sha256'; secret: string } | { scheme: 'bearer'; token: string };

/** `webhook_activity.status` values (AdCP core/webhook-activity-record). */
export type AttemptStatus = 'success' | 'failed' | 'timeout' | 'connection_error';

export interface AttemptOutcome {
  status: AttemptStatus;
  http_status_code: number | null;
  error_message: string | null;
  response_time_ms: number | null;
  /** Seconds from a `Retry-After` header, when the receiver sent one. */
  retry_after_seconds?: number;
  /** A failure no retry can fix (the URL points into a private network). */
  terminal?: boolean;
}

/**
 * One webhook fire: scheduled once with its exact body bytes (so every retry sends the same
 * bytes and `idempotency_key`), then one event per attempt until it succeeds, fails for good or
 * runs out of horizon. Every attempt is an event, so a crash mid-retry resumes where it was.
 */
export type WebhookEvent =
  | {
      readonly type: 'WebhookScheduled';
      readonly data: {
        readonly idempotency_key: string;
        readonly owner: string;
        readonly notification_type: 'task_status' | 'delivery_report' | 'media_buy_status';
        readonly task_id?: string;
        readonly media_buy_id?: string;
        /** AdCP's notification_type for media-buy notifications (reports, impairments); reports carry a sequence_number. */
        readonly adcp_notification_type?: 'scheduled' | 'final' | 'delayed' | 'adjusted' | 'impairment';
        readonly sequence_number?: number;
        readonly url: string;
        readonly auth: WebhookAuth;
        readonly body: string;
        readonly scheduled_at: string;
      };
    }
  | {
      readonly type: 'WebhookAttempted';
      readonly data: AttemptOutcome & {
        readonly idempotency_key: string;
        readonly attempt: number;
        readonly started_at: string;
        readonly at: string;
        /** When the next attempt is due; null when this was the last one. */
        readonly next_attempt_at: string | null;
      };
    };

export type WebhookCommand =
  | { readonly type: 'ScheduleWebhook'; readonly data: Extract<WebhookEvent, { type: 'WebhookScheduled' }>['data'] }
  | { readonly type: 'RecordAttempt'; readonly outcome: AttemptOutcome; readonly startedAt: string; readonly now: string; readonly jitter: number };

export type WebhookState =
  | { readonly state: 'none' }
  | {
      readonly state: 'pending' | 'delivered' | 'failed';
      readonly attempts: number;
      readonly firstAttemptAt?: string;
      /** When the next attempt may start (undefined: now). */
      readonly nextAttemptAt?: string;
      readonly scheduled: Extract<WebhookEvent, { type: 'WebhookScheduled' }>['data'] };

export const webhookStream = (idempotencyKey: string) => `webhook-${idempotencyKey}`;

/** Retry policy: exponential back-off from 1 s doubling to 1 h, ±25 % jitter, within 23 h of the first attempt. */
export const RETRY = { initialMs: 1000, maxDelayMs: 3600_000, jitter: 0.25, horizonMs: 23 * 3600_000, maxRetryAfterMs: 3600_000 } as const;

/**
 * Transient outcomes are retried: 5xx, 429, 401 (a receiver-side configuration error per spec §6
 * rule 10: retried, recorded, never disables the webhook), timeouts and connection errors.
 * Any other 4xx is the receiver's final word.
 */
export function isTransient(o: AttemptOutcome): boolean {
  if (o.terminal) return false;
  if (o.status === 'timeout' || o.status === 'connection_error') return true;
  const code = o.http_status_code ?? 0;
  return code >= 500 || code === 429 || code === 401;
}

/** When attempt `attempts + 1` is due after an attempt that ended at `now`; null past the horizon. */
export function nextAttemptAt(attempts: number, firstAttemptAt: string, now: string, outcome: AttemptOutcome, jitter: number): string | null {
  const backoff = Math.min(RETRY.initialMs * 2 ** (attempts - 1), RETRY.maxDelayMs);
  let delay = backoff * (1 + RETRY.jitter * (2 * jitter - 1));
  if (outcome.retry_after_seconds !== undefined) delay = Math.max(delay, Math.min(outcome.retry_after_seconds * 1000, RETRY.maxRetryAfterMs));
  const due = Date.parse(now) + Math.round(delay);
  return due - Date.parse(firstAttemptAt) > RETRY.horizonMs ? null : new Date(due).toISOString();
}

export const webhookDecider: Decider<WebhookCommand, WebhookEvent, WebhookState> = {
  initialState: () => ({ state: 'none' }),
  decide(command, state) {
    switch (command.type) {
      case 'ScheduleWebhook':
        if (state.state !== 'none') throw new AppError('CONFLICT', `webhook ${command.data.idempotency_key} is already scheduled`);
        return [{ type: 'WebhookScheduled', data: command.data }];
      case 'RecordAttempt': {
        if (state.state === 'none') throw new AppError('NOT_FOUND', 'no such webhook');
        if (state.state !== 'pending') throw new AppError('INVALID_STATE', `webhook ${state.scheduled.idempotency_key} is ${state.state}`);
        const attempt = state.attempts + 1;
        const first = state.firstAttemptAt ?? command.startedAt;
        const retry = command.outcome.status !== 'success' && isTransient(command.outcome);
        return [
          {
            type: 'WebhookAttempted',
            data: {
              idempotency_key: state.scheduled.idempotency_key,
              attempt,
              ...command.outcome,
              started_at: command.startedAt,
              at: command.now,
              next_attempt_at: retry ? nextAttemptAt(attempt, first, command.now, command.outcome, command.jitter) : null,
            },
          },
        ];
      }
      default:
        return assertNever(command);
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'WebhookScheduled':
        return { state: 'pending', attempts: 0, scheduled: event.data };
      case 'WebhookAttempted': {
        if (state.state === 'none') return state;
        const d = event.data;
        const next = d.status === 'success' ? 'delivered' : d.next_attempt_at ? 'pending' : 'failed';
        return { ...state, state: next, attempts: d.attempt, firstAttemptAt: state.firstAttemptAt ?? d.started_at, nextAttemptAt: d.next_attempt_at ?? undefined };
      }
      default:
        return assertNever(event);
    }
  },
};
