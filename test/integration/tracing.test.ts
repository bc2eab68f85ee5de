import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { tracing } from '@opentelemetry/sdk-node';
import { issueApiKey } from '../../src/application/api-keys';
import { inSpan, traceIds } from '../../src/shared/tracing';
import { startTracing, type RunningTracing } from '../../src/shared/tracing-sdk';
import { startTestGateway, tempDir } from '../support/gateway';
import { KAFKA_BROKERS, PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { mcpCall } from '../support/mcp-call';
import { startReceiver } from '../support/receiver';

const SANDBOX = { brand: { domain: 'acme.example' }, operator: 'agency.example', sandbox: true };
const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
const traceIdOf = (traceparent: string | undefined) => /^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(traceparent ?? '')?.[1];
/** Every buy waits for the seller; the sandbox's simulated seller (a consumer) approves it at once. */
const FLOW_ENV = { APPROVAL_POLICY: 'manual', SANDBOX_APPROVAL_DELAY_MS: '0', ALLOW_PRIVATE_WEBHOOK_URLS: '1' };

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;

/**
 * One create_media_buy over MCP with a webhook, sent to `gateways[0]`; checks that one trace holds
 * the request, the command, the append, the projection batch, the consumers and the webhook POST,
 * and that the receiver saw that trace id in `traceparent`. Returns the trace id.
 */
async function traceOneCreate(exporter: tracing.InMemorySpanExporter, gateways: Gateway[], receiver: Awaited<ReturnType<typeof startReceiver>>, ref: string): Promise<string> {
  const [gw] = gateways;
  const key = (await issueApiKey(gw!.app.ports.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
  for (const g of gateways) await eventually(async () => (await fetch(`${g.url}/readyz`)).status === 200, 20_000, 'readyz');
  exporter.reset();
  const created = await mcpCall(gw!.url, key, 'create_media_buy', {
    account: SANDBOX,
    brand: { domain: 'acme.example' },
    packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
    start_time: 'asap',
    end_time: future(10),
    idempotency_key: `tracing-test-${ref}`.padEnd(24, '0'),
    push_notification_config: { url: `${receiver.origin}/hooks/create_media_buy`, operation_id: `op-${ref}` },
  });
  expect({ isError: created.isError, status: created.body.status, error: created.body.adcp_error }).toEqual({ isError: false, status: 'submitted', error: undefined });

  const hook = (await eventually(() => receiver.received.find((w) => w.json.operation_id === `op-${ref}` && w.json.status === 'completed'), 60_000, 'the completed webhook'))!;
  const request = exporter.getFinishedSpans().find((s) => s.kind === 1 /* SERVER */ && s.attributes['adcp.binding'] === 'mcp' && s.attributes['http.request.method'] === 'POST');
  expect(request).toBeDefined();
  const traceId = request!.spanContext().traceId;
  // The request began the trace: nothing came before it.
  expect(request!.parentSpanContext).toBeUndefined();
  expect(traceIdOf(hook.headers.traceparent)).toBe(traceId);
  // Every webhook the buy caused (submitted's `working`, then `completed`) continues the same trace.
  for (const w of receiver.received.filter((r) => r.json.operation_id === `op-${ref}`)) expect(traceIdOf(w.headers.traceparent)).toBe(traceId);

  const expected = ['POST /mcp', 'command CreateMediaBuy', 'eventstore.append', 'projections.batch', 'consumer webhook-dispatcher', 'consumer sandbox-approver', 'webhook attempt', 'webhook POST'];
  const names = await eventually(() => {
    const have = new Set(exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId).map((s) => s.name));
    return expected.every((n) => have.has(n)) ? have : undefined;
  }, 10_000, 'every span of the flow in the trace');
  expect([...names!]).toEqual(expect.arrayContaining(expected));

  // Parent links, not just a shared id: the POST's span is a child of the attempt's, and the
  // dispatcher's span descends from an append made inside the request.
  const spans = exporter.getFinishedSpans();
  const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
  const ancestry = (s: tracing.ReadableSpan | undefined): string[] => (s ? [s.name, ...ancestry(s.parentSpanContext ? byId.get(s.parentSpanContext.spanId) : undefined)] : []);
  const post = spans.find((s) => s.name === 'webhook POST' && s.spanContext().traceId === traceId)!;
  expect(byId.get(post.parentSpanContext!.spanId)?.name).toBe('webhook attempt');
  // Issue 45, finding 8 (a): the receiver's host, never its path (where receivers keep routing tokens).
  expect(post.attributes).toMatchObject({ 'http.request.method': 'POST', 'server.address': '127.0.0.1', 'url.scheme': 'http' });
  expect(JSON.stringify(post.attributes)).not.toContain('/hooks/');
  const dispatcher = spans.find((s) => s.name === 'consumer webhook-dispatcher' && s.spanContext().traceId === traceId)!;
  expect(ancestry(dispatcher)).toEqual(expect.arrayContaining(['eventstore.append', 'POST /mcp']));
  expect(ancestry(dispatcher).at(-1)).toBe('POST /mcp');
  return traceId;
}

/**
 * Issue 38, item 3 (must show): with the SDK's in-memory exporter, one create_media_buy over MCP
 * with a webhook makes one trace, from the MCP request through the append, the projection batch and
 * the consumer that scheduled the webhook to the webhook POST; the receiver sees that trace id in
 * the POST's `traceparent`. On SQLite with the embedded bus, and on PostgreSQL + Kafka with two
 * instances (whichever consumes and delivers).
 */
describe('tracing: an MCP create_media_buy followed to its webhook', () => {
  let exporter: tracing.InMemorySpanExporter;
  let otel: RunningTracing;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    exporter = new tracing.InMemorySpanExporter();
    otel = startTracing({ exporter });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await otel?.shutdown();
  });

  it('SQLite, embedded bus: one trace from the MCP request to the webhook POST, whose traceparent the receiver gets', async () => {
    const gw = await startTestGateway(FLOW_ENV);
    try {
      await traceOneCreate(exporter, [gw], receiver, 'sqlite');
    } finally {
      await gw.stop();
    }
  });

  describeWith('PostgreSQL and Kafka', !!PG_ADMIN_URL && !!KAFKA_BROKERS, 'PostgreSQL + Kafka, two instances', () => {
    it('the same trace crosses the Kafka message (traceparent in its headers) to whichever instance delivers', async () => {
      const db = await createTestDatabase('adcp_tracing');
      const topic = `adcp.events.tracing-${randomBytes(4).toString('hex')}`;
      const env = { ...FLOW_ENV, EVENT_STORE_URL: db.url, KAFKA_BROKERS: KAFKA_BROKERS!, KAFKA_TOPIC: topic };
      const gateways = [await startTestGateway({ ...env, DATA_DIR: tempDir() }), await startTestGateway({ ...env, DATA_DIR: tempDir() })];
      const watcher = new Kafka({ clientId: 'tracing-it', brokers: KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).consumer({ groupId: `tracing-it-${randomBytes(4).toString('hex')}` });
      const headers: { type: string; traceparent?: string }[] = [];
      try {
        await watcher.connect();
        await watcher.subscribe({ topic, fromBeginning: true });
        await watcher.run({ eachMessage: async ({ message }) => void headers.push({ type: String(message.headers?.type ?? ''), ...(message.headers?.traceparent ? { traceparent: String(message.headers.traceparent) } : {}) }) });
        const traceId = await traceOneCreate(exporter, gateways, receiver, 'pgkafka');
        const created = await eventually(() => headers.find((h) => h.type === 'MediaBuyCreated'), 20_000, 'the MediaBuyCreated message');
        expect(traceIdOf(created!.traceparent)).toBe(traceId);
        // The Kafka bus counts each group's lag from the broker's offsets: caught up once the webhook went out.
        const lag = async () => /^adcp_consumer_lag_events\{consumer="webhook-dispatcher"\} (\d+)$/m.exec(await (await fetch(`${gateways[0]!.url}/metrics`)).text())?.[1];
        await eventually(async () => (await lag()) === '0', 20_000, 'the dispatcher caught up in /metrics');
      } finally {
        await watcher.disconnect();
        for (const gw of gateways) await gw.stop();
        await db.drop();
      }
      // Two instances on PostgreSQL, six consumer groups joining on each: ~50 s alone on this machine.
    }, 180_000);
  });

  /** One create_media_buy over MCP sent with the caller's own `traceparent`; returns the request's server span. */
  async function createWithTraceparent(gw: Gateway, traceparent: string, ref: string): Promise<tracing.ReadableSpan> {
    const key = (await issueApiKey(gw.app.ports.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    exporter.reset();
    const res = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${key}`, traceparent, tracestate: 'caller=secret-vendor-state' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_media_buy', arguments: {
        account: SANDBOX,
        brand: { domain: 'acme.example' },
        packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
        start_time: 'asap',
        end_time: future(10),
        idempotency_key: `tracing-caller-${ref}`.padEnd(24, '0'),
      } } }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { result: { isError?: boolean } }).result.isError).toBeFalsy();
    return (await eventually(() => exporter.getFinishedSpans().find((s) => s.kind === 1 /* SERVER */ && s.attributes['adcp.binding'] === 'mcp'), 10_000, 'the request span'))!;
  }

  /** Every `traceparent`/`tracestate` the log holds, as one string to search. */
  const loggedTraceContext = async (gw: Gateway) => JSON.stringify((await gw.app.ports.store.readAll()).map((e) => [e.metadata?.traceparent, e.metadata?.tracestate]));

  /**
   * Issue 45, finding 8 (a): a caller's `traceparent` is not trusted by default. Flags 00 used to
   * switch tracing off for the whole flow (the SDK's parent-based sampler follows the parent), and
   * the caller's trace id (and tracestate) went into every event's metadata for good. Now the
   * request starts a trace of its own, sampled by our sampler, and keeps the caller's span as a link.
   */
  it("an untrusted caller's traceparent neither silences tracing nor enters the log: a new trace, linked to the caller's span", async () => {
    const gw = await startTestGateway();
    try {
      const callerTrace = randomBytes(16).toString('hex');
      const callerSpan = randomBytes(8).toString('hex');
      const request = await createWithTraceparent(gw, `00-${callerTrace}-${callerSpan}-00`, 'untrusted');
      expect(request.spanContext().traceId).not.toBe(callerTrace);
      expect(request.parentSpanContext).toBeUndefined();
      expect(request.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([[callerTrace, callerSpan]]);
      const logged = await loggedTraceContext(gw);
      expect(logged).toContain(request.spanContext().traceId);
      expect(logged).not.toContain(callerTrace);
      expect(logged).not.toContain('secret-vendor-state');
    } finally {
      await gw.stop();
    }
  });

  it('TRUST_TRACE_CONTEXT naming the caller continues its trace, into the log', async () => {
    const gw = await startTestGateway({ TRUST_TRACE_CONTEXT: '127.0.0.1,::1' });
    try {
      const callerTrace = randomBytes(16).toString('hex');
      const callerSpan = randomBytes(8).toString('hex');
      const request = await createWithTraceparent(gw, `00-${callerTrace}-${callerSpan}-01`, 'trusted');
      expect(request.spanContext().traceId).toBe(callerTrace);
      expect(request.parentSpanContext?.spanId).toBe(callerSpan);
      expect(await loggedTraceContext(gw)).toContain(callerTrace);
    } finally {
      await gw.stop();
    }
  });

  /**
   * Issue 45, finding 8 (a): request spans carried the raw path (`url.path`, and the name of a
   * request no route matched), route tokens and ids included. Now the route's pattern only.
   */
  it("request spans name the route's pattern, never the raw path and the tokens it holds", async () => {
    const gw = await startTestGateway();
    try {
      exporter.reset();
      const token = `rt_${randomBytes(12).toString('hex')}`;
      await fetch(`${gw.url}/webhooks/media_buy_delivery/agent-1/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      await fetch(`${gw.url}/no/such/route/${token}`);
      const spans = await eventually(() => {
        const server = exporter.getFinishedSpans().filter((s) => s.kind === 1 /* SERVER */);
        return server.length >= 2 ? server : undefined;
      }, 10_000, 'both request spans');
      expect(spans!.map((s) => [s.name, s.attributes['http.route']])).toEqual([
        ['POST /webhooks/:task_type/:agent_id/:route_token', '/webhooks/:task_type/:agent_id/:route_token'],
        ['GET', undefined],
      ]);
      expect(JSON.stringify(spans!.map((s) => [s.name, s.attributes, s.events]))).not.toContain(token);
    } finally {
      await gw.stop();
    }
  });

  it('log lines written inside a span carry its trace and span ids', async () => {
    const ids = await inSpan('probe', {}, async (span) => ({ logged: traceIds(), span: span!.spanContext() }));
    expect(ids.logged).toEqual({ trace_id: ids.span.traceId, span_id: ids.span.spanId });
    expect(traceIds()).toEqual({});
  });
});
