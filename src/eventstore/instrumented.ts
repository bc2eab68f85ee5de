import { ConcurrencyError, type AppendResult, type EventStore, type ExpectedVersion, type NewEvent } from './port';
import { inSpan, SpanKind, traceHeaders, tracingActive } from '../shared/tracing';

/** How an append ended, as /metrics counts it (`adcp_appends_total{outcome}`). */
export type AppendOutcome = 'ok' | 'conflict' | 'failed';

/**
 * The store every append of the gateway goes through, counted (appends by outcome, events
 * written) and, with tracing on, traced: a span per append, and the span's `traceparent` written
 * into each event's metadata, which is how a trace follows the events to the projections, the
 * consumers and the webhooks they schedule. An event that already carries one (a copied log)
 * keeps it.
 */
export function instrumentAppends(store: EventStore, counted: (outcome: AppendOutcome, events: number) => void): EventStore {
  const counting = (streamId: string, events: readonly NewEvent[], options?: { expectedVersion?: ExpectedVersion }): Promise<AppendResult> =>
    store.append(streamId, events, options).then(
      (result) => {
        counted('ok', events.length);
        return result;
      },
      (err: unknown) => {
        counted(err instanceof ConcurrencyError ? 'conflict' : 'failed', 0);
        throw err;
      },
    );
  const traced = (streamId: string, events: readonly NewEvent[], options?: { expectedVersion?: ExpectedVersion }): Promise<AppendResult> =>
    inSpan('eventstore.append', { kind: SpanKind.PRODUCER, attributes: { 'adcp.stream_id': streamId, 'adcp.events': events.length, 'adcp.event_types': [...new Set(events.map((e) => e.type))].join(',') } }, async (span) => {
      const carried = traceHeaders();
      const result = await counting(streamId, events.map((e) => (e.metadata?.traceparent ? e : { ...e, metadata: { ...e.metadata, ...carried } })), options);
      span?.setAttribute('adcp.log.position', result.position);
      return result;
    });
  return {
    kind: store.kind,
    append: (streamId, events, options) => (tracingActive() ? traced(streamId, events, options) : counting(streamId, events, options)),
    readStream: (streamId, options) => store.readStream(streamId, options),
    readAll: (options) => store.readAll(options),
    headPosition: () => store.headPosition(),
    subscribe: (handler, options) => store.subscribe(handler, options),
    close: () => store.close(),
  };
}
