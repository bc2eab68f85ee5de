import { isTransient, nextAttemptAt, RETRY, webhookDecider, type AttemptOutcome, type WebhookState } from '../../../src/domain/webhook/webhook';

const scheduled = {
  idempotency_key: 'whk_abcdefghijklmnop',
  owner: 'acme',
  notification_type: 'task_status' as const,
  url: 'https://buyer.example/hook',
  auth: { scheme: 'rfc9421' as const },
  body: '{}',
  scheduled_at: '2026-11-23T10:00:00.000Z',
};
const outcome = (http: number | null, status: AttemptOutcome['status'] = http && http < 300 ? 'success' : 'failed', extra: Partial<AttemptOutcome> = {}): AttemptOutcome => ({
  status,
  http_status_code: http,
  error_message: status === 'success' ? null : 'x',
  response_time_ms: http ? 5 : null,
  ...extra,
});

function run(outcomes: AttemptOutcome[], start = Date.parse(scheduled.scheduled_at), stepMs = 1000): WebhookState {
  let state = webhookDecider.evolve(webhookDecider.initialState(), { type: 'WebhookScheduled', data: scheduled });
  let t = start;
  for (const o of outcomes) {
    const now = new Date(t).toISOString();
    for (const e of webhookDecider.decide({ type: 'RecordAttempt', outcome: o, startedAt: now, now, jitter: 0.5 }, state)) state = webhookDecider.evolve(state, e);
    t += stepMs;
  }
  return state;
}

describe('webhook delivery decider', () => {
  it('retries 5xx, 429, 401, timeouts and connection errors; stops on other 4xx and on a refused address', () => {
    expect([500, 503, 429, 401].map((c) => isTransient(outcome(c)))).toEqual([true, true, true, true]);
    expect(isTransient(outcome(null, 'timeout'))).toBe(true);
    expect(isTransient(outcome(null, 'connection_error'))).toBe(true);
    expect([400, 403, 404, 409, 413, 302].map((c) => isTransient(outcome(c)))).toEqual([false, false, false, false, false, false]);
    expect(isTransient(outcome(null, 'connection_error', { terminal: true }))).toBe(false);
  });

  it('503, 503, 200: pending after each failure, delivered after the success, three attempts', () => {
    expect(run([outcome(503)])).toMatchObject({ state: 'pending', attempts: 1 });
    expect(run([outcome(503), outcome(503), outcome(200)])).toMatchObject({ state: 'delivered', attempts: 3 });
    expect(run([outcome(404)])).toMatchObject({ state: 'failed', attempts: 1 });
  });

  it('backs off exponentially with jitter, honours Retry-After, and gives up past the horizon', () => {
    const t0 = '2026-11-23T10:00:00.000Z';
    const at = (attempts: number, jitter: number, o = outcome(503)) => Date.parse(nextAttemptAt(attempts, t0, t0, o, jitter)!) - Date.parse(t0);
    expect(at(1, 0.5)).toBe(1000);
    expect(at(3, 0.5)).toBe(4000);
    expect(at(1, 0)).toBe(750);
    expect(at(1, 1)).toBe(1250);
    expect(at(30, 0.5)).toBe(RETRY.maxDelayMs);
    expect(at(1, 0.5, outcome(503, 'failed', { retry_after_seconds: 120 }))).toBe(120_000);
    const late = new Date(Date.parse(t0) + RETRY.horizonMs - 500).toISOString();
    expect(nextAttemptAt(3, t0, late, outcome(503), 0.5)).toBeNull();
  });

  it('refuses attempts on a finished delivery', () => {
    const done = run([outcome(200)]);
    expect(() => webhookDecider.decide({ type: 'RecordAttempt', outcome: outcome(200), startedAt: 'x', now: 'x', jitter: 0 }, done)).toThrow(/delivered/);
  });
});
