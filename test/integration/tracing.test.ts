import { tracing } from '@opentelemetry/sdk-node';
import { issueApiKey } from '../../src/application/api-keys';
import { inSpan, traceIds } from '../../src/shared/tracing';
import { startTracing, type RunningTracing } from '../../src/shared/tracing-sdk';
import { startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { mcpCall } from '../support/mcp-call';
import { startReceiver } from '../support/receiver';

const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const traceIdOf = (traceparent: string | undefined) => /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '')?.[1];

/**
 * Issue 38, item 3 (must show): with the SDK's in-memory exporter, one create_media_buy over MCP
 * with a webhook makes one trace, from the MCP request through the append, the projection batch and
 * the consumer that scheduled the webhook to the webhook POST; the receiver sees that trace id in
 * the POST's `traceparent`.
 */
describe('tracing: an MCP create_media_buy followed to its webhook', () => {
  let exporter: tracing.InMemorySpanExporter;
  let otel: RunningTracing;
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    exporter = new tracing.InMemorySpanExporter();
    otel = startTracing({ exporter });
    receiver = await startReceiver();
    // Every buy waits for the seller; the sandbox's simulated seller approves it at once.
    gw = await startTestGateway({ APPROVAL_POLICY: 'manual', SANDBOX_APPROVAL_DELAY_MS: '0', ALLOW_PRIVATE_WEBHOOK_URLS: '1' });
  });
  afterAll(async () => {
    await gw?.stop();
    await receiver?.close();
    await otel?.shutdown();
  });

  it('one trace holds the request, the command, the append, the projection, the consumer and the webhook POST; the receiver gets its traceparent', async () => {
    const key = (await issueApiKey(gw.app.ports.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    exporter.reset();
    const created = await mcpCall(gw.url, key, 'create_media_buy', {
      account: SANDBOX,
      brand: { domain: 'acme.example' },
      packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
      start_time: 'asap',
      end_time: future(10),
      idempotency_key: 'tracing-test-create-0001',
      push_notification_config: { url: `${receiver.origin}/hooks/create_media_buy`, operation_id: 'op-tracing' },
    });
    expect({ isError: created.isError, status: created.body.status, error: created.body.adcp_error }).toEqual({ isError: false, status: "submitted", error: undefined });

    const hook = (await eventually(() => receiver.received.find((w) => w.json.status === 'completed'), 20_000, 'the completed webhook'))!;
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.kind === 1 /* SERVER */ && s.attributes['adcp.binding'] === 'mcp' && s.attributes['http.request.method'] === 'POST');
    expect(request).toBeDefined();
    const traceId = request!.spanContext().traceId;
    // The request began the trace: nothing came before it.
    expect(request!.parentSpanContext).toBeUndefined();
    expect(traceIdOf(hook.headers.traceparent)).toBe(traceId);
    // Every webhook the buy caused (submitted's `working`, then `completed`) continues the same trace.
    for (const w of receiver.received) expect(traceIdOf(w.headers.traceparent)).toBe(traceId);

    const inTrace = await eventually(() => {
      const names = new Set(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId).map((s) => s.name));
      return ['command CreateMediaBuy', 'eventstore.append', 'projections.batch', 'consumer webhook-dispatcher', 'consumer sandbox-approver', 'webhook attempt', 'webhook POST'].every((n) => names.has(n)) ? names : undefined;
    }, 10_000, 'every span of the flow in the trace');
    expect([...inTrace!]).toEqual(expect.arrayContaining(['POST /mcp', 'eventstore.append', 'projections.batch', 'consumer webhook-dispatcher', 'webhook attempt', 'webhook POST']));

    // Parent links, not just a shared id: the POST's span is a child of the attempt's, and the
    // dispatcher's span a child of an append made inside the request.
    const byId = new Map(exporter.getFinishedSpans().map((s) => [s.spanContext().spanId, s]));
    const post = exporter.getFinishedSpans().find((s) => s.name === 'webhook POST' && s.spanContext().traceId === traceId)!;
    expect(byId.get(post.parentSpanContext!.spanId)?.name).toBe('webhook attempt');
    const ancestry = (s: tracing.ReadableSpan | undefined): string[] => (s ? [s.name, ...ancestry(s.parentSpanContext ? byId.get(s.parentSpanContext.spanId) : undefined)] : []);
    const dispatcher = exporter.getFinishedSpans().find((s) => s.name === 'consumer webhook-dispatcher' && s.spanContext().traceId === traceId)!;
    expect(ancestry(dispatcher)).toEqual(expect.arrayContaining(['eventstore.append', 'POST /mcp']));
    expect(ancestry(dispatcher).at(-1)).toBe('POST /mcp');
  });

  it('log lines written inside a span carry its trace and span ids', async () => {
    const ids = await inSpan('probe', {}, async (span) => ({ logged: traceIds(), span: span!.spanContext() }));
    expect(ids.logged).toEqual({ trace_id: ids.span.traceId, span_id: ids.span.spanId });
    expect(traceIds()).toEqual({});
  });
});
