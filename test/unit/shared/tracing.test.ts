import { trace } from '@opentelemetry/api';
import { tracing } from '@opentelemetry/sdk-node';
import { inBatchSpan, inTraceRuns, tracingActive } from '../../../src/shared/tracing';
import { startTracing } from '../../../src/shared/tracing-sdk';

const A = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const B = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const event = (position: number, traceparent?: string) => ({ position, metadata: { time: '2026-11-27T00:00:00Z', ...(traceparent ? { traceparent } : {}) } });

/**
 * The consumer and projection seams of shared/tracing.ts: a batch is handed on whole when tracing
 * is off; with it on, in order, in runs of one trace each, every run inside a span of that trace
 * (an event with none starts a trace of its own, never borrowing the one active by chance).
 */
describe('tracing seams over batches of logged events', () => {
  const batch = [event(1, A), event(2, A), event(3, B), event(4), event(5, A)];

  it('off: the handler gets the batch as it came, once', async () => {
    expect(tracingActive()).toBe(false);
    const calls: number[][] = [];
    await inTraceRuns('consumer test', batch, {}, async (run) => void calls.push(run.map((e) => e.position)));
    expect(calls).toEqual([[1, 2, 3, 4, 5]]);
  });

  it('on: runs of one trace, in order, each inside a span continuing that trace; a failed run stops the rest', async () => {
    const exporter = new tracing.InMemorySpanExporter();
    const otel = startTracing({ exporter });
    try {
      const calls: { positions: number[]; traceId?: string }[] = [];
      // Called while some unrelated span is active, as a subscription woken by a request's append is.
      const outer = await trace.getTracer('test').startActiveSpan('unrelated request', async (span) => {
        await inTraceRuns('consumer test', batch, {}, async (run) => void calls.push({ positions: run.map((e) => e.position), traceId: trace.getActiveSpan()?.spanContext().traceId }));
        span.end();
        return span.spanContext().traceId;
      });
      expect(calls.map((c) => c.positions)).toEqual([[1, 2], [3], [4], [5]]);
      expect(calls.map((c) => c.traceId)).toEqual([A.slice(3, 35), B.slice(3, 35), expect.stringMatching(/^[0-9a-f]{32}$/), A.slice(3, 35)]);
      expect([A.slice(3, 35), B.slice(3, 35), outer]).not.toContain(calls[2]!.traceId);
      expect(exporter.getFinishedSpans().filter((s) => s.name === 'consumer test')).toHaveLength(4);
      expect(exporter.getFinishedSpans().filter((s) => s.name === 'consumer test' && s.spanContext().traceId === outer)).toEqual([]);

      const handled: number[] = [];
      await expect(inTraceRuns('consumer test', batch, {}, async (run) => {
        if (run[0]!.position === 3) throw new Error('handler failed');
        handled.push(...run.map((e) => e.position));
      })).rejects.toThrow('handler failed');
      expect(handled).toEqual([1, 2]);

      exporter.reset();
      await inBatchSpan('projections.batch', batch, {}, async () => {});
      const [span] = exporter.getFinishedSpans();
      expect(span!.spanContext().traceId).toBe(A.slice(3, 35));
      expect(span!.links.map((l) => l.context.traceId)).toEqual([B.slice(3, 35)]);
    } finally {
      await otel.shutdown();
    }
    expect(tracingActive()).toBe(false);
  });
});
