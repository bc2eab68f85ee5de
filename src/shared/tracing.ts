import { context, trace, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Attributes, type Context, type Link, type Span } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * The gateway's tracing seams, over the OpenTelemetry API only (the SDK is started by the
 * composition root: ./tracing-sdk.ts). Tracing is off unless an SDK was started; every helper
 * here then returns at its first line, so the seams cost a boolean test when off.
 *
 * Context crosses the log as W3C `traceparent` (and `tracestate`) in event metadata: each append
 * made inside a span records it, and whatever later works on the event (a projection batch, a
 * consumer, the webhook attempt it scheduled) continues that trace, on whichever instance.
 */

let active = false;

/** Called by startTracing / its shutdown: the seams read this before doing anything. */
export function setTracingActive(on: boolean): void {
  active = on;
}

export const tracingActive = (): boolean => active;

const tracer = () => trace.getTracer('adcp-gateway');
const w3c = new W3CTraceContextPropagator();
const carrierSetter = { set: (c: Record<string, string>, k: string, v: string) => void (c[k] = v) };
const carrierGetter = {
  get: (c: Record<string, unknown>, k: string) => (typeof c[k] === 'string' ? (c[k] as string) : undefined),
  keys: (c: Record<string, unknown>) => Object.keys(c),
};

/** `traceparent` (and `tracestate`) of the active span, for a header set or event metadata; {} when none. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (active) w3c.inject(ctx, carrier, carrierSetter);
  return carrier;
}

/** The context a `traceparent` in headers or event metadata names (the active one when absent or malformed). */
export function contextFrom(carrier: Record<string, unknown> | undefined, base: Context = context.active()): Context {
  return carrier && typeof carrier.traceparent === 'string' ? w3c.extract(base, carrier, carrierGetter) : base;
}

/** Trace and span id of the active span, for log lines (pino's mixin); {} when none. */
export function traceIds(): { trace_id?: string; span_id?: string } {
  if (!active) return {};
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

export interface SpanOptions {
  attributes?: Attributes;
  kind?: SpanKind;
  /** Parent context (default: the active one). */
  parent?: Context;
  links?: Link[];
}

/**
 * Runs `fn` inside a new active span, ended when `fn` settles; a throw marks it failed. When
 * tracing is off it is `fn()` and nothing else.
 */
export function inSpan<T>(name: string, options: SpanOptions, fn: (span?: Span) => Promise<T>): Promise<T> {
  if (!active) return fn();
  const span = tracer().startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, links: options.links }, options.parent ?? context.active());
  return context.with(trace.setSpan(options.parent ?? context.active(), span), async () => {
    try {
      return await fn(span);
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Records an error on a span and marks it failed. */
export function failSpan(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** What an event carries of its trace: its metadata (where appends record traceparent). */
interface Traced {
  position: number;
  metadata?: Record<string, unknown>;
}

const traceparentOf = (e: Traced): string | undefined => (typeof e.metadata?.traceparent === 'string' ? e.metadata.traceparent : undefined);

/**
 * The context an event's metadata names, or none: never the active one, which in a subscription's
 * callback may be whichever request's append happened to wake it.
 */
export const eventContext = (metadata: Record<string, unknown> | undefined): Context => contextFrom(metadata, ROOT_CONTEXT);

/**
 * A span for work on a batch of logged events that writes nothing to the log (a projection batch):
 * the child of the first traced event's trace, linked to every other trace in the batch, so each
 * command's trace shows the batch that applied it.
 */
export function inBatchSpan<T>(name: string, events: readonly Traced[], attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  if (!active || events.length === 0) return fn();
  const parents = [...new Set(events.map(traceparentOf).filter((t): t is string => t !== undefined))];
  const [first, ...rest] = parents.map((traceparent) => eventContext({ traceparent }));
  const links = rest.map((ctx) => ({ context: trace.getSpanContext(ctx)! })).filter((l) => l.context);
  return inSpan(name, { parent: first ?? ROOT_CONTEXT, links, attributes: { ...attributes, 'adcp.events': events.length, 'adcp.log.position.last': events[events.length - 1]!.position } }, fn);
}

/**
 * Hands `handle` the batch in runs of consecutive events of one trace, each run inside its own
 * span continuing that trace: what a consumer appends while handling an event then belongs to the
 * event's trace, never to another command's that happened to share the batch. Order is kept and a
 * failed run stops the rest (the bus redelivers the batch: at-least-once, as before).
 */
export async function inTraceRuns<E extends Traced>(name: string, events: E[], attributes: Attributes, handle: (run: E[]) => Promise<void>): Promise<void> {
  if (!active) return handle(events);
  let start = 0;
  for (let i = 1; i <= events.length; i++) {
    if (i < events.length && traceparentOf(events[i]!) === traceparentOf(events[start]!)) continue;
    const run = events.slice(start, i);
    const traceparent = traceparentOf(run[0]!);
    await inSpan(
      name,
      { kind: SpanKind.CONSUMER, parent: eventContext({ traceparent }), attributes: { ...attributes, 'adcp.events': run.length, 'adcp.log.position.last': run[run.length - 1]!.position } },
      () => handle(run),
    );
    start = i;
  }
}

export { SpanKind };
