import { context, propagation, trace } from '@opentelemetry/api';
import { NodeSDK, tracing } from '@opentelemetry/sdk-node';
import { setTracingActive } from './tracing';

export interface TracingOptions {
  /** Overrides OTEL_SERVICE_NAME's default (`adcp-gateway`). */
  serviceName?: string;
  /**
   * Where spans go instead of what OTEL_TRACES_EXPORTER names (tests and the bench hand in the
   * SDK's InMemorySpanExporter). Spans are exported one by one when given, batched otherwise.
   */
  exporter?: tracing.SpanExporter;
}

export interface RunningTracing {
  /** Flushes what is buffered, then turns the seams off again. */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry Node SDK: exporter, sampler, resource and propagators from the standard
 * OTEL_* environment (read by the SDK itself), no auto-instrumentation (the gateway's own seams make
 * the spans, see ./tracing.ts). The SDK is loaded only here, so a gateway with tracing off never
 * loads it.
 */
export function startTracing(options: TracingOptions = {}): RunningTracing {
  const sdk = new NodeSDK({
    serviceName: options.serviceName ?? 'adcp-gateway',
    instrumentations: [],
    ...(options.exporter ? { spanProcessors: [new tracing.SimpleSpanProcessor(options.exporter)] } : {}),
  });
  sdk.start();
  setTracingActive(true);
  return {
    async shutdown() {
      setTracingActive(false);
      await sdk.shutdown();
      // Leaves the process as it was before (a test may start the SDK again).
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
