import pino, { type Logger } from 'pino';
import { traceIds, tracingActive } from './shared/tracing';

/**
 * JSON logs on stderr, so stdout stays free for CLI output (keys, JSON lines). With tracing on, each
 * line written inside a span carries its `trace_id` and `span_id` (the mixin is left out when off).
 */
export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'adcp-gateway' }, ...(tracingActive() ? { mixin: traceIds } : {}) }, pino.destination(2));
}
