import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { GraphQLError, type ExecutionArgs, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { OperationArgs, Response as SseResponse } from 'graphql-sse';
import { createHandler } from 'graphql-sse/lib/use/fastify';
import { WebSocketServer, type WebSocket } from 'ws';
import type { App } from '../services';
import type { Principal } from '../application/api-keys';
import type { GraphQLContext } from '../graphql/context';
import { operationPricer, type OperationRefusal } from '../graphql/cost-limits';
import { preparedErrors, type GraphqlDocuments, type OperationParams } from '../graphql/documents';
import { formatError } from '../graphql/format-error';
import { AppError } from '../shared/errors';
import { authenticate, principalOf } from './auth';
import { bearerChallenge } from './errors';
import { clientAddressOf } from './client-address';
import { budgetOwner } from '../limits/client-budgets';
import { addressBudgetKey } from '../limits/address-key';
import { publicOrigin, requestOrigin } from './well-known';
import type { LoopStalls } from './loop-stalls';

/** Operations one WebSocket may have running at once. */
export const MAX_SUBSCRIPTIONS_PER_SOCKET = 10;
/** WebSockets one key (or anonymous address) may hold open on one instance. */
export const MAX_SOCKETS_PER_CALLER = 10;
/** The largest message a client may send over the WebSocket (a subscribe message holds one document). */
const MAX_MESSAGE_BYTES = 64 * 1024;

/** The WebSocket path (graphql-ws, beside POST /graphql on the same port) and the SSE path (graphql-sse). */
export const GRAPHQL_WS_PATH = '/graphql';
export const GRAPHQL_SSE_PATH = '/graphql/stream';

/**
 * GraphQL subscriptions (and queries, if a client sends them that way) for clients that follow
 * the log live: graphql-ws over a WebSocket at /graphql, and graphql-sse (Server-Sent Events) at
 * /graphql/stream for clients that cannot open one. Both authenticate as POST /graphql does
 * (the WebSocket's `connection_init` payload carries `{authorization: "Bearer …"}`, since a
 * browser cannot set headers on it), price each operation against the caller's points, and count
 * each operation (an SSE stream: its HTTP request) against their request rate.
 */
export function registerGraphqlLive(fastify: FastifyInstance, app: App, schema: GraphQLSchema, documents: GraphqlDocuments, stalls: LoopStalls): void {
  const limits = app.config.limits;
  const budgets = app.budgets;
  const price = limits && budgets ? operationPricer(schema, limits, budgets, documents) : undefined;
  const format = formatError(app);

  /**
   * Refused by the caller's request rate or their points: the error, else undefined. An operation
   * over the WebSocket is a request of its own (its messages never pass the HTTP hooks); an SSE
   * stream is one HTTP request, which the request limits have counted already.
   */
  async function guard(principal: Principal | null, address: string, params: OperationParams, counted: boolean): Promise<OperationRefusal | undefined> {
    if (!limits || !budgets || !price) return undefined;
    const refused = counted ? undefined : await takeRequest(principal, address);
    return refused ?? price(budgetOwner(principal, address), params);
  }

  /** One request taken from the caller's rate: the refusal when it is spent, else undefined. */
  async function takeRequest(principal: Principal | null, address: string): Promise<OperationRefusal | undefined> {
    if (!limits || !budgets) return undefined;
    const owner = budgetOwner(principal, address);
    const rate = await budgets.take(owner.requests, 1, limits.requestsPerMinute[owner.role], 60);
    if (rate.allowed) return undefined;
    return { message: `request rate limit reached (${rate.limit} per ${rate.windowSeconds} s); try again in ${rate.resetSeconds} s`, extensions: { code: 'RATE_LIMITED', retryAfter: rate.resetSeconds } };
  }

  /**
   * The operation to run, from the documents every transport shares (parsed and validated once,
   * in time linear in the text): returned to graphql-ws and graphql-sse as their execution
   * arguments, so neither parses or validates it again; or the errors that refuse it.
   */
  function prepared(params: OperationParams): Omit<ExecutionArgs, 'contextValue'> | GraphQLError[] {
    const doc = documents.prepare(typeof params.query === 'string' ? params.query : '');
    if (!doc.valid) return preparedErrors(doc);
    const variableValues = params.variables && typeof params.variables === 'object' ? (params.variables as Record<string, unknown>) : undefined;
    return { schema, document: doc.document, operationName: typeof params.operationName === 'string' ? params.operationName : undefined, variableValues };
  }

  const formatResult = (result: ExecutionResult) => (result.errors ? { ...result, errors: result.errors.map((e) => format(e.toJSON(), e)) } : result);

  // --- graphql-ws -------------------------------------------------------------------------
  type Extra = { principal?: Principal | null; address?: string; caller?: string; operations?: number };
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const socketsPerCaller = new Map<string, number>();
  const contextFor = (principal: Principal | null, address: string, origin: string): GraphQLContext => ({ app, principal, requestId: randomUUID(), origin, clientAddress: address });
  const clientAddress = clientAddressOf(app.config.trustProxy);
  const originOf = (req: IncomingMessage) => app.config.publicUrl ?? requestOrigin('http', req.headers.host, req.socket);

  useServer<Record<string, unknown> | undefined, Extra>(
    {
      schema,
      connectionInitWaitTimeout: 5_000,
      onConnect: async (ctx) => {
        const given = ctx.connectionParams?.authorization ?? ctx.extra.request.headers.authorization;
        const credential = typeof given === 'string' ? given : undefined;
        const address = clientAddress(ctx.extra.request);
        // The socket is a request like any other: credentials that fail count against the address,
        // which past its budget is answered 4429 for each further failure (credentials that verify
        // always pass), and opening one takes from the request rate.
        let principal: Principal | null;
        try {
          principal = await principalOf(credential, app, 'graphql');
        } catch (err) {
          if (!(err instanceof AppError && err.code === 'UNAUTHENTICATED')) return false;
          const throttled = await app.authFailures?.blocked(address);
          if (throttled) {
            ctx.extra.socket.close(4429, `too many failed authentications from this address; try again in ${throttled.resetSeconds} s`);
            return false;
          }
          await app.authFailures?.record(address);
          return false; // 4403: the credentials do not verify
        }
        const rate = await takeRequest(principal, address);
        if (rate) {
          ctx.extra.socket.close(4429, rate.message);
          return false;
        }
        const caller = principal ? `key:${principal.keyId}` : `ip:${addressBudgetKey(address)}`;
        const open = socketsPerCaller.get(caller) ?? 0;
        if (open >= MAX_SOCKETS_PER_CALLER) {
          ctx.extra.socket.close(4429, `at most ${MAX_SOCKETS_PER_CALLER} open subscription sockets per caller`);
          return false;
        }
        socketsPerCaller.set(caller, open + 1);
        Object.assign(ctx.extra, { principal, address, caller, operations: 0 });
        return true;
      },
      onClose: (ctx) => {
        const caller = ctx.extra.caller;
        if (!caller) return;
        const open = (socketsPerCaller.get(caller) ?? 1) - 1;
        if (open > 0) socketsPerCaller.set(caller, open);
        else socketsPerCaller.delete(caller);
      },
      onSubscribe: async (ctx, _id, payload) => {
        const describe = () => `graphql-ws subscribe operation ${JSON.stringify(payload.operationName ?? null)} (${ctx.extra.caller ?? 'unknown caller'})`;
        stalls.running(describe);
        if ((ctx.extra.operations ?? 0) >= MAX_SUBSCRIPTIONS_PER_SOCKET) {
          return [new GraphQLError(`at most ${MAX_SUBSCRIPTIONS_PER_SOCKET} operations at once per socket; complete one first`, { extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' } })];
        }
        // Counted before the checks below wait on anything: subscribe messages sent together are
        // counted one after another, not all against the same count.
        ctx.extra.operations = (ctx.extra.operations ?? 0) + 1;
        const refusal = await guard(ctx.extra.principal ?? null, ctx.extra.address ?? 'unknown', payload, false);
        stalls.running(describe); // the document is prepared below (or was, while pricing it)
        const run = refusal ? [new GraphQLError(refusal.message, { extensions: refusal.extensions })] : prepared(payload);
        if (Array.isArray(run)) ctx.extra.operations -= 1;
        return run;
      },
      onComplete: (ctx) => {
        ctx.extra.operations = Math.max(0, (ctx.extra.operations ?? 1) - 1);
      },
      context: (ctx) => contextFor(ctx.extra.principal ?? null, ctx.extra.address ?? 'unknown', originOf(ctx.extra.request)),
      onNext: (_ctx, _id, _payload, _args, result) => formatResult(result),
      onError: (_ctx, _id, _payload, errors) => errors.map((e) => format(e.toJSON(), e)),
    },
    wss,
  );

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== GRAPHQL_WS_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  };
  fastify.server.on('upgrade', onUpgrade);
  // Open sockets would hold the server's close: they are told the server is going away.
  fastify.addHook('preClose', (done) => {
    fastify.server.off('upgrade', onUpgrade);
    for (const ws of wss.clients as Set<WebSocket>) ws.close(1001, 'server shutting down');
    wss.close(() => done());
  });

  // --- graphql-sse ------------------------------------------------------------------------
  type LiveContext = GraphQLContext & Record<PropertyKey, unknown>;
  const sse = createHandler<LiveContext>({
    schema,
    onSubscribe: async (req, params): Promise<SseResponse | OperationArgs<LiveContext>> => {
      const describe = () => `graphql-sse operation ${JSON.stringify(params.operationName ?? null)} (request ${req.raw.id})`;
      stalls.running(describe);
      const fastifyReq = req.raw;
      let principal: Principal | null;
      try {
        principal = await authenticate(fastifyReq, app);
      } catch (err) {
        const message = err instanceof AppError ? err.message : 'credentials could not be checked';
        return [JSON.stringify({ errors: [{ message, extensions: { code: err instanceof AppError ? err.code : 'UNAUTHENTICATED' } }] }), { status: 401, statusText: 'Unauthorized', headers: { 'content-type': 'application/json; charset=utf-8', 'www-authenticate': err instanceof AppError ? bearerChallenge(err) : 'Bearer' } }];
      }
      stalls.running(describe); // pricing and preparing the document come next
      const refusal = await guard(principal, fastifyReq.ip, params, true);
      if (refusal) {
        const status = refusal.extensions.code === 'THROTTLED' || refusal.extensions.code === 'RATE_LIMITED' ? 429 : 400;
        return [JSON.stringify({ errors: [refusal] }), { status, statusText: status === 429 ? 'Too Many Requests' : 'Bad Request', headers: { 'content-type': 'application/json; charset=utf-8' } }];
      }
      const run = prepared(params);
      if (Array.isArray(run)) {
        return [JSON.stringify({ errors: run.map((e) => format(e.toJSON(), e)) }), { status: 400, statusText: 'Bad Request', headers: { 'content-type': 'application/json; charset=utf-8' } }];
      }
      // The context travels in the execution arguments: graphql-sse asks its `context` option only
      // when onSubscribe returns none, which this one never does.
      return { ...run, contextValue: contextFor(principal, fastifyReq.ip, publicOrigin(app, fastifyReq)) as LiveContext };
    },
    // graphql-sse writes what this returns as JSON; it types it as an execution result.
    onNext: (_ctx, _req, result) => formatResult(result as ExecutionResult) as ExecutionResult,
  });
  fastify.route({
    url: GRAPHQL_SSE_PATH,
    method: ['GET', 'POST', 'PUT', 'DELETE'],
    handler: async (req, reply) => {
      // The stream is written to the socket directly, for as long as the subscription lasts.
      reply.hijack();
      try {
        await sse(req, reply);
      } catch (err) {
        req.log.error({ err }, 'graphql-sse stream failed');
        if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify({ errors: [{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }] }));
        else reply.raw.end();
      }
    },
  });
}
