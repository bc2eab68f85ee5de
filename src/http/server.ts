import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { ApolloServer, HeaderMap } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { LRUCache } from 'lru-cache';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { GraphQLError } from 'graphql';
import type { App } from '../services';
import { readiness } from '../application/system-reads';
import type { GraphQLContext } from '../graphql/context';
import { gatewaySchema } from '../graphql/schema';
import { AppError, httpStatusOf } from '../shared/errors';
import { strictJsonParser } from './json-body';
import { hasNulEscape } from '../shared/nul';
import { authenticate } from './auth';
import { bearerChallenge, errorSenderFor, fromFastifyError, internalErrorBody } from './errors';
import { docsPage, printOpenApi } from './openapi';
import { publicOrigin, registerWellKnownRoutes } from './well-known';
import { registerReceiverRoutes } from './receiver-route';
import { registerStoryboardRoutes } from './storyboard-route';
import { registerBrandRoutes } from './brands-route';
import { registerRevalidateRoute } from './revalidate-route';
import { registerFeedRoute } from './feed-route';
import { registerOAuthRoutes } from './oauth-routes';
import { registerTaskRoutes } from './tasks-route';
import { registerMcpRoutes } from './mcp/route';
import { registerPreviewRoutes } from './preview-route';
import { nestingLimitRule } from '../graphql/nesting-limit';
import { formatError } from '../graphql/format-error';
import { priceOperations, refuseWhenPointsSpent, stringifyResultExtensionsFirst, withCost } from '../graphql/cost-limits';
import { GraphqlDocuments, operationParamsOf, prepareOperations, preparedErrors, type InvalidDocumentAnswer } from '../graphql/documents';
import { LoopStalls } from './loop-stalls';
import { graphqlRouteHandler } from '../graphql/http-handler';
import { registerRequestLimits } from './request-limits';
import { registerA2aRoutes } from './a2a/route';
import { registerWorkCaps } from './work-caps';
import { registerGraphqlLive } from './graphql-live';
import { registerExplorerRoutes, sendExplorer, wantsExplorer } from './explorer-route';
import { registerConsoleRoutes } from './console-route';
import { registerRequestTracing } from './request-tracing';

/**
 * Apollo's plugins here, and only these. We emit no cache hints; the default plugin wraps every
 * field and halves list throughput. No landing page of Apollo's (it loads a sandbox from a CDN):
 * the explorer is served locally. Neither has per-request hooks; nothing else here does either:
 * the cost limits price operations before Apollo (graphql/cost-limits.ts), since any hook costs
 * every request. (The bench's Apollo floor row runs with the same list.)
 */
export const apolloPlugins = () => [ApolloServerPluginCacheControlDisabled(), ApolloServerPluginLandingPageDisabled()];

/** How long an answer of /readyz and /metrics is reused (Prometheus scrapes every 15 s or so; probes every few). */
const SYSTEM_READS_TTL_MS = 1000;

/**
 * `compute`, run at most once per `ttlMs`: callers within `ttlMs` of a result get that result, and
 * callers arriving while it runs share the one run (lru-cache's fetch). A failure is not kept.
 */
function computedAtMostEvery<V extends {}>(ttlMs: number, compute: () => Promise<V>): () => Promise<V> {
  const cache = new LRUCache<'current', V>({ max: 1, ttl: ttlMs, fetchMethod: () => compute() });
  return async () => (await cache.fetch('current'))!;
}

/**
 * Whether an Authorization header may read /metrics: any when no METRICS_TOKEN is set (the
 * contract: `GET /metrics`), else only `Bearer <token>` (compared by digest, in constant time).
 */
function metricsTokenCheck(token: string | undefined): (authorization: string | undefined) => boolean {
  if (token === undefined) return () => true;
  const expected = createHash('sha256').update(token).digest();
  return (authorization) => {
    const presented = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
    return presented !== undefined && timingSafeEqual(createHash('sha256').update(presented).digest(), expected);
  };
}

/** Without the resource limits, the longest a request may take to arrive (headers and body). */
const SLOW_REQUEST_MS = 60_000;

export async function buildServer(app: App): Promise<FastifyInstance> {
  const limits = app.config.limits;
  const fastify = Fastify({
    loggerInstance: app.log.child({ component: 'http' }) as unknown as FastifyBaseLogger,
    // Access is counted in /metrics; per-request log lines would dominate the log volume.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: app.config.bodyLimitBytes,
    // Path parameters as long as a URL may be: each route bounds its own (a domain at DNS's 253,
    // a storyboard id) and says which one is too long, where the router's default (100) answered
    // a legal 101-character domain "no route".
    routerOptions: { maxParamLength: http.maxHeaderSize },
    // A request whose headers and body have not all arrived by then is answered 408 and its
    // connection closed (Fastify turns Node's limit off). With the limits on, the time budget
    // answers it first (503, connection closed: ./work-caps.ts).
    requestTimeout: (limits?.requestTimeBudgetMs ?? SLOW_REQUEST_MS) + 10_000,
    // A hop count becomes a function: this Fastify treats a bare number as "trust nothing".
    trustProxy: typeof app.config.trustProxy === 'number' ? ((hops: number) => (_addr: string, i: number) => i < hops)(app.config.trustProxy) : app.config.trustProxy,
    // Errors Fastify raises before routing (a URL that does not decode, a bad Content-Type
    // header) answer in the URL's binding's shape like every other error.
    frameworkErrors: (err, req, reply) => {
      const mapped = fromFastifyError(err) ?? new AppError('INVALID_REQUEST', err.message);
      errorSenderFor(req.url)(reply, mapped);
    },
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
  });

  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, strictJsonParser(fastify));

  // First of the hooks, so every later one and the route run inside the request's span.
  registerRequestTracing(fastify, app.config.trustTraceContext);

  const stalls = new LoopStalls(app.log, app.metrics.loopStalls);
  // Watched once serving: starting up (building the schema, catching projections up) blocks by design.
  fastify.addHook('onListen', (done) => {
    stalls.start();
    done();
  });
  fastify.addHook('onClose', (_instance, done) => {
    stalls.stop();
    done();
  });

  // No route takes a NUL in its path or query (PostgreSQL cannot even compare one): refused first.
  fastify.addHook('onRequest', (req, reply, done) => {
    stalls.running(() => `${req.method} ${req.url.split('?')[0]} (request ${req.id})`);
    if (!req.url.includes('%00')) return done();
    errorSenderFor(req.url)(reply, new AppError('INVALID_REQUEST', 'the URL contains U+0000 (%00), which no parameter accepts'));
  });

  // Callback style: an async hook would cost a promise on every response.
  fastify.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    app.metrics.httpRequests.inc({ method: req.method, route, status: String(reply.statusCode) });
    app.metrics.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    done();
  });

  fastify.setNotFoundHandler((req, reply) =>
    errorSenderFor(req.url)(reply, new AppError('NOT_FOUND', `no route for ${req.method} ${req.url.split('?')[0]}`)),
  );

  fastify.setErrorHandler((err, req, reply) => {
    const send = errorSenderFor(req.url);
    if (err instanceof AppError) return send(reply, err);
    const mapped = fromFastifyError(err as { code?: string; statusCode?: number; message: string });
    if (mapped) return send(reply, mapped);
    req.log.error({ err }, 'unhandled error');
    return reply.status(500).send(internalErrorBody(req.url));
  });

  const budgets = app.budgets;
  if (limits && budgets && app.authFailures) {
    registerWorkCaps(fastify, limits);
    registerRequestLimits(fastify, app, limits, budgets, app.authFailures, refuseWhenPointsSpent(limits, budgets));
  }

  // authenticate() keeps each request's outcome here (the limits and the route share it).
  fastify.decorateRequest('principalOutcome', null);
  fastify.decorateRequest('rawBody', null);
  // A GraphQL operation's price and the points it left (graphql/cost-limits.ts).
  fastify.decorateRequest('operationPrice', null);
  fastify.decorateRequest('pointsLeft', null);

  fastify.get('/healthz', async () => ({ status: 'ok' }));

  // Anonymous and unthrottled (probes and scrapers must never be refused by a budget a client
  // could spend), so each answer is computed at most once a second, whoever asks how often:
  // readiness reads the log's head, the metrics a query per lagging projection, the webhook
  // queue's depth and the Kafka groups' offsets.
  const currentReadiness = computedAtMostEvery(SYSTEM_READS_TTL_MS, () => readiness(app.ports));
  // The metrics' lag gauges read the readiness answer /readyz gives: one computation a second for both.
  const currentMetrics = computedAtMostEvery(SYSTEM_READS_TTL_MS, async () => {
    for (const p of (await currentReadiness()).projections) app.metrics.projectionLag.set({ projection: p.name }, p.lag);
    return app.metrics.registry.metrics();
  });

  fastify.get('/readyz', async (_req, reply) => {
    const { head, projections, ready, failed } = await currentReadiness();
    // A projection stopped by an event it cannot apply is named, not waited for: every instance
    // reads the same log, so a 503 for it would take the whole service out for one read model.
    const status = !ready ? 'catching_up' : failed.length > 0 ? 'degraded' : 'ready';
    return reply.status(ready ? 200 : 503).send({ status, head, projections, ...(failed.length > 0 ? { failed } : {}) });
  });

  const scraperAllowed = metricsTokenCheck(app.config.metricsToken);
  fastify.get('/metrics', async (req, reply) => {
    if (!scraperAllowed(req.headers.authorization)) {
      return errorSenderFor(req.url)(reply, new AppError('UNAUTHENTICATED', app.config.metricsToken && req.headers.authorization ? 'the metrics token does not match' : 'the metrics need a bearer token (METRICS_TOKEN)'));
    }
    return reply.type(app.metrics.registry.contentType).send(await currentMetrics());
  });

  // No drain plugin: fastify.close() already waits for in-flight requests (GraphQL operations
  // included) and closes idle keep-alive sockets; the integration's plugin calls fastify.close()
  // from inside Apollo's stop, which deadlocks when Apollo is stopped from Fastify's onClose.
  registerTaskRoutes(fastify, app);
  registerMcpRoutes(fastify, app);
  registerA2aRoutes(fastify, app);
  registerPreviewRoutes(fastify, app);
  registerWellKnownRoutes(fastify, app);
  await registerReceiverRoutes(fastify, app);
  registerStoryboardRoutes(fastify, app);
  await registerBrandRoutes(fastify, app);
  registerRevalidateRoute(fastify, app);
  registerFeedRoute(fastify, app);
  await registerOAuthRoutes(fastify, app);
  const openapi = printOpenApi();
  const docs = docsPage();
  fastify.get('/openapi.json', async (_req, reply) => reply.type('application/json').send(openapi));
  fastify.get('/docs', async (_req, reply) => reply.type('text/html; charset=utf-8').send(docs));

  const schema = await gatewaySchema();
  // Every transport's documents, parsed and validated once (./graphql/documents.ts); Apollo reads
  // them from here instead of parsing and validating again.
  const documents = new GraphqlDocuments(schema);
  app.metrics.bounded('graphql_documents', () => documents.held());
  const apollo = new ApolloServer<GraphQLContext>({
    schema,
    plugins: apolloPlugins(),
    formatError: formatError(app),
    documentStore: documents.apolloDocumentStore(),
    // Automatic persisted queries would let a hash stand for a text the route never prepared.
    persistedQueries: false,
    // Only met if a document reached Apollo unprepared, which the route's preHandler prevents.
    validationRules: [nestingLimitRule],
    includeStacktraceInErrorResponses: false,
    // Introspection stays on: buyer tooling discovers the schema, and nothing in it is secret.
    introspection: true,
    // The CLI owns SIGINT/SIGTERM and shuts down in order (HTTP, consumers, stores).
    stopOnTerminationSignals: false,
    ...(limits && budgets ? { stringifyResult: stringifyResultExtensionsFirst } : {}),
  });
  await apollo.start();
  fastify.addHook('onClose', async () => {
    await apollo.stop();
  });

  const context = async (req: FastifyRequest): Promise<GraphQLContext> => {
    try {
      // The URL check cannot see a NUL written as an escape inside a GET request's variables
      // (the document's own are refused when it is prepared: ../graphql/documents.ts).
      const { variables } = { ...(req.query as object), ...(req.body as object) } as { variables?: unknown };
      if (typeof variables === 'string' && hasNulEscape(variables)) {
        throw new GraphQLError('the GraphQL request contains U+0000 (NUL), which no field accepts', { extensions: { code: 'BAD_REQUEST', http: { status: 400 } } });
      }
      // Every context has the same keys, in the same order: one shape for V8's inline caches.
      return { app, principal: await authenticate(req, app), requestId: req.id, origin: publicOrigin(app, req), clientAddress: req.ip };
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      // Apollo answers a context failure with the status and headers carried in extensions.http.
      const headers = new HeaderMap(err.code === 'UNAVAILABLE' ? [['retry-after', '30']] : err.code === 'UNAUTHENTICATED' ? [['www-authenticate', bearerChallenge(err)]] : []);
      throw new GraphQLError(err.message, { extensions: { code: err.code, http: { status: httpStatusOf[err.code], headers } } });
    }
  };
  registerGraphqlLive(fastify, app, schema, documents, stalls);
  registerExplorerRoutes(fastify);
  registerConsoleRoutes(fastify);
  const finish = limits && budgets ? withCost(limits, budgets) : undefined;
  const answerOperation = graphqlRouteHandler(apollo, context, finish);
  const format = formatError(app);
  const refuseInvalid: InvalidDocumentAnswer = async (req, reply, prepared) => {
    const body = JSON.stringify({ errors: preparedErrors(prepared).map((e) => format(e.toJSON(), e)) });
    const text = finish ? await finish(req, reply, body) : body;
    void reply.status(400).type('application/json; charset=utf-8').send(text);
  };
  const checkDocument = limits && budgets ? priceOperations(schema, limits, budgets, documents, refuseInvalid) : prepareOperations(documents, refuseInvalid);
  fastify.route({
    url: '/graphql',
    method: ['GET', 'POST', 'OPTIONS'],
    preHandler(req, reply, done) {
      // Preparing and pricing the document is the synchronous work a stall would come from.
      stalls.running(() => `${req.method} /graphql operation ${JSON.stringify(operationParamsOf(req)?.operationName ?? null)} (request ${req.id})`);
      checkDocument.call(this, req, reply, done);
    },
    // A person opening /graphql in a browser gets the explorer; everything else is an operation.
    handler(req, reply) {
      return wantsExplorer(req) ? sendExplorer(reply) : answerOperation.call(this, req, reply);
    },
  });

  return fastify;
}

