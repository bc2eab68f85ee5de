import { context, trace, ROOT_CONTEXT, SpanStatusCode, type Context, type Link, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import proxyAddr from 'proxy-addr';
import type { Config } from '../config';
import { contextFrom, SpanKind, tracingActive } from '../shared/tracing';

/** The binding a path belongs to, as a span attribute (one trace search per binding). */
function bindingOf(url: string): string {
  if (url.startsWith('/mcp')) return 'mcp';
  if (url.startsWith('/graphql')) return 'graphql';
  if (url.startsWith('/a2a') || url === '/') return 'a2a';
  if (url.startsWith('/api/')) return 'rest';
  return 'http';
}

/** TRUST_TRACE_CONTEXT as a test of the request's socket peer (never a forwarded address: anyone can write one). */
function trustedCaller(setting: Config['trustTraceContext']): (req: FastifyRequest) => boolean {
  if (setting === true) return () => true;
  if (setting === false) return () => false;
  const trust = proxyAddr.compile(setting.split(',').map((s) => s.trim()));
  return (req) => {
    const peer = req.raw.socket.remoteAddress;
    return peer !== undefined && trust(peer, 0);
  };
}

/**
 * Where a request's span starts. A trusted caller's `traceparent` is continued (its trace id, its
 * sampling decision, and through the appends its context in event metadata). Anyone else's starts
 * a new trace, sampled by our own sampler, the caller's span kept only as a link: a caller must
 * not be able to switch tracing off (flags 00), force it on, or write its ids into the log.
 */
function parentOf(req: FastifyRequest, trusted: boolean): { parent: Context; links: Link[] } {
  const headers = req.headers as Record<string, unknown>;
  if (typeof headers.traceparent !== 'string') return { parent: context.active(), links: [] };
  const inbound = contextFrom(headers, ROOT_CONTEXT);
  if (trusted) return { parent: inbound, links: [] };
  const spanContext = trace.getSpanContext(inbound);
  // The link drops `tracestate`: the caller's vendor data is not ours to export.
  return { parent: ROOT_CONTEXT, links: spanContext ? [{ context: { traceId: spanContext.traceId, spanId: spanContext.spanId, traceFlags: spanContext.traceFlags, isRemote: true }, attributes: { 'adcp.link': 'caller' } }] : [] };
}

/**
 * One server span per request, every binding alike (REST, GraphQL, MCP, A2A are all routes of this
 * server). A caller's `traceparent` is continued only when TRUST_TRACE_CONTEXT trusts it (see
 * parentOf). Registered only with tracing on, so it costs nothing otherwise.
 *
 * The span is named and tagged by the route's pattern (`http.route`, `/webhooks/:task_type/…`),
 * never the raw path: paths hold route tokens, ids and domains that do not belong in a tracing
 * backend. A request no route matched is just its method.
 *
 * The span is made active for the rest of the request: the hook runs what follows inside it, and the
 * raw request and response are bound to it, because the body arrives in their 'data' events, which
 * Node runs in the socket's context, not ours.
 */
export function registerRequestTracing(fastify: FastifyInstance, trustTraceContext: Config['trustTraceContext']): void {
  if (!tracingActive()) return;
  const trusts = trustedCaller(trustTraceContext);
  const spans = new WeakMap<FastifyRequest, Span>();
  fastify.addHook('onRequest', (req, reply, done) => {
    if (!tracingActive()) return done(); // turned off since (a shut-down SDK; the bench's alternating rounds)
    const { parent, links } = parentOf(req, trusts(req));
    // Routing is done before onRequest: the pattern is known (undefined: no route matched).
    const route = req.routeOptions.url;
    const span = trace.getTracer('adcp-gateway').startSpan(route ? `${req.method} ${route}` : req.method, {
      kind: SpanKind.SERVER,
      links,
      attributes: {
        'http.request.method': req.method,
        ...(route ? { 'http.route': route } : {}),
        'adcp.binding': bindingOf(req.url.split('?')[0]!),
        'adcp.request_id': String(req.id),
      },
    }, parent);
    spans.set(req, span);
    const ctx = trace.setSpan(parent, span);
    context.bind(ctx, req.raw);
    context.bind(ctx, reply.raw);
    context.with(ctx, done);
  });
  fastify.addHook('onResponse', (req, reply, done) => {
    const span = spans.get(req);
    if (span) {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}
