import { context, trace, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { contextFrom, SpanKind, tracingActive } from '../shared/tracing';

/** The binding a path belongs to, as a span attribute (one trace search per binding). */
function bindingOf(url: string): string {
  if (url.startsWith('/mcp')) return 'mcp';
  if (url.startsWith('/graphql')) return 'graphql';
  if (url.startsWith('/a2a') || url === '/') return 'a2a';
  if (url.startsWith('/api/')) return 'rest';
  return 'http';
}

/**
 * One server span per request, every binding alike (REST, GraphQL, MCP, A2A are all routes of this
 * server), continuing the caller's trace when it sends `traceparent`. Registered only with tracing
 * on, so it costs nothing otherwise.
 *
 * The span is made active for the rest of the request: the hook runs what follows inside it, and the
 * raw request and response are bound to it, because the body arrives in their 'data' events, which
 * Node runs in the socket's context, not ours.
 */
export function registerRequestTracing(fastify: FastifyInstance): void {
  if (!tracingActive()) return;
  const spans = new WeakMap<FastifyRequest, Span>();
  fastify.addHook('onRequest', (req, reply, done) => {
    if (!tracingActive()) return done(); // turned off since (a shut-down SDK; the bench's alternating rounds)
    const parent = contextFrom(req.headers as Record<string, unknown>);
    const path = req.url.split('?')[0]!;
    const span = trace.getTracer('adcp-gateway').startSpan(`${req.method} ${path}`, {
      kind: SpanKind.SERVER,
      attributes: { 'http.request.method': req.method, 'url.path': path, 'adcp.binding': bindingOf(path), 'adcp.request_id': String(req.id) },
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
      const route = req.routeOptions.url;
      if (route) span.updateName(`${req.method} ${route}`).setAttribute('http.route', route);
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    }
    done();
  });
}
