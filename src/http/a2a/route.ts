import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import type { MessageSendParams, TaskIdParams } from '@a2a-js/sdk';
import { A2AError, JsonRpcTransportHandler, type A2ARequestHandler } from '@a2a-js/sdk/server';
import type { App } from '../../services';
import { AppError } from '../../shared/errors';
import { isObject } from '../../shared/objects';
import { agentCaller, refuseAmbiguousSignedBody, registerProtectedResourceMetadata, type AgentCall } from '../agent-auth';
import { strictJsonParser } from '../json-body';
import { originCaching, publicOrigin } from '../well-known';
import { A2A_PATH, agentCard } from './card';
import { CompletedTasks } from './completed-tasks';
import { judgeA2aEnvelope } from './envelope';
import { AdcpA2AHandler } from './handler';

/** Where A2A clients look for the agent card: the origin's well-known paths (both names in use), and under the endpoint. */
const CARD_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json', `${A2A_PATH}/.well-known/agent-card.json`, `${A2A_PATH}/.well-known/agent.json`];

/**
 * The sales agent over A2A (JSON-RPC 2.0 at `POST /a2a`, @a2a-js/sdk's transport handler), as
 * AdCP buyers and the official runner reach it with `--protocol a2a`: the agent card at the
 * well-known paths, and the same credentials, request signing, limits and AdCP 3.0 answers as MCP.
 * A request the transport cannot parse is a JSON-RPC error, never a 5xx.
 */
export function registerA2aRoutes(fastify: FastifyInstance, app: App): void {
  const completed = new CompletedTasks();
  // Open streams per key on this instance (see MAX_STREAMS_PER_KEY).
  const streams = new Map<string, number>();
  // Every request's "caller went away" switch: a shutdown ends open streams rather than wait for them.
  const live = new Set<AbortController>();
  fastify.addHook('preClose', (done) => {
    for (const c of live) c.abort();
    done();
  });
  for (const url of CARD_PATHS) {
    fastify.get(url, async (req, reply) =>
      originCaching(app, reply, 300).header('access-control-allow-origin', '*').send(agentCard(app, publicOrigin(app, req))),
    );
  }
  // RFC 9728 metadata for the endpoint and for the agent's base URL (where A2A clients are pointed;
  // a client that appends the base URL's path `/` asks with a trailing slash).
  for (const path of [A2A_PATH, '', '/']) registerProtectedResourceMetadata(fastify, app, path, path === '/' ? '' : path, 'adcp-gateway sales agent (A2A)');

  void fastify.register(async (a2a) => {
    a2a.removeContentTypeParser('application/json');
    a2a.addContentTypeParser('application/json', { parseAs: 'string' }, strictJsonParser(a2a, { forbiddenKeys: 'flag' }));
    // The endpoint the card names, and the agent's base URL: A2A clients (and the official runner's
    // raw probes, with `--protocol a2a`) are pointed at the origin.
    for (const url of [A2A_PATH, `${A2A_PATH}/`, '/']) {
      a2a.post(url, { onRequest: (req, reply, done) => refuseAmbiguousSignedBody(app, req, reply, done) }, (req, reply) => handlePost(app, { completed, streams, live }, req, reply));
      if (url === '/') continue;
      a2a.route({
        method: ['GET', 'DELETE', 'PUT', 'PATCH'],
        url,
        handler: async (_req, reply) =>
          reply.status(405).header('allow', 'POST').send({ jsonrpc: '2.0', error: { code: -32600, message: 'Method not allowed: POST JSON-RPC requests here (the agent card is at /.well-known/agent-card.json)' }, id: null }),
      });
    }
  });
}

async function handlePost(app: App, state: { completed: CompletedTasks; streams: Map<string, number>; live: Set<AbortController> }, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { completed, streams, live } = state;
  const caller = await agentCaller(app, req, req.url.startsWith(A2A_PATH) ? A2A_PATH : '', callOf(req.body));
  if ('refused' in caller) return caller.refused(reply);
  const origin = publicOrigin(app, req);
  const ctx = {
    app,
    ports: app.ports,
    principal: caller.principal,
    requestId: req.id,
    origin,
    wire: 'adcp3' as const,
    // A `__proto__` or `constructor.prototype` key (dropped by the parser) is refused as the task's error.
    ...(req.forbiddenKeys ? { refusal: new AppError('INVALID_REQUEST', 'the request contains a "__proto__" or "constructor.prototype" key, which no field accepts') } : {}),
  };
  // The caller going away ends a stream's polling at once.
  const gone = new AbortController();
  live.add(gone);
  reply.raw.once('close', () => {
    gone.abort();
    live.delete(gone);
  });
  const envelope = judgeA2aEnvelope(req.body);
  // Nothing to answer: the HTTP exchange succeeded, with no content.
  if ('notification' in envelope) return reply.status(204).send();
  // JSON-RPC answers its own errors in the body; the HTTP exchange itself succeeded.
  if ('answer' in envelope) return reply.status(200).type('application/json').send(envelope.answer);
  const body = envelope.request;
  const handler = new AdcpA2AHandler(() => agentCard(app, origin), ctx, completed, gone.signal);
  if (body.method === 'message/stream' || body.method === 'tasks/resubscribe') {
    const events = body.method === 'message/stream' ? handler.sendMessageStream(body.params as unknown as MessageSendParams) : handler.resubscribe(body.params as unknown as TaskIdParams);
    return stream(reply, streams, caller.principal.keyId, body.id, events);
  }
  // The other methods through @a2a-js/sdk's transport handler.
  const answer = await new JsonRpcTransportHandler(withFaultsMasked(handler, reply)).handle(body);
  return reply.status(200).type('application/json').send(answer);
}

/**
 * @a2a-js/sdk's transport handler answers an error that is not an A2AError as -32603 in the
 * error's own words (a TypeError's "… is not a function"): the handler's faults are answered as
 * rpcErrorOf answers a stream's, logged and masked.
 */
function withFaultsMasked(handler: A2ARequestHandler, reply: FastifyReply): A2ARequestHandler {
  return new Proxy(handler, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = value.apply(target, args);
        if (!(result instanceof Promise)) return result;
        return result.catch((err: unknown) => {
          const { code, message } = rpcErrorOf(err, reply);
          throw err instanceof A2AError ? err : new A2AError(code, message);
        });
      };
    },
  });
}

/** The most streams one key may hold open on an instance: each polls its task until it ends. */
const MAX_STREAMS_PER_KEY = 20;

/**
 * A streaming answer as Server-Sent Events (`data: <JSON-RPC response>` per event, as A2A's
 * clients read them). An error before the first event is a plain JSON-RPC error answer; one later
 * is an `event: error` with the JSON-RPC error, and the stream ends.
 */
async function stream(reply: FastifyReply, open: Map<string, number>, keyId: string, id: string | number | null, events: AsyncGenerator<unknown, void, undefined>): Promise<FastifyReply> {
  const held = open.get(keyId) ?? 0;
  if (held >= MAX_STREAMS_PER_KEY) {
    await events.return(undefined);
    return reply.status(200).type('application/json').send({ jsonrpc: '2.0', id, error: { code: -32000, message: `this key already holds ${held} open streams, the most one key may; close one, or follow the task with tasks/get` } });
  }
  let first: IteratorResult<unknown, void>;
  try {
    first = await events.next();
  } catch (err) {
    return reply.status(200).type('application/json').send({ jsonrpc: '2.0', id, error: rpcErrorOf(err, reply) });
  }
  open.set(keyId, held + 1);
  const release = () => {
    const n = (open.get(keyId) ?? 1) - 1;
    if (n > 0) open.set(keyId, n);
    else open.delete(keyId);
  };
  async function* sse(): AsyncGenerator<string> {
    try {
      if (!first.done) yield `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: first.value })}\n\n`;
      for (;;) {
        let next: IteratorResult<unknown, void>;
        try {
          next = await events.next();
        } catch (err) {
          yield `event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error: rpcErrorOf(err, reply) })}\n\n`;
          return;
        }
        if (next.done) return;
        yield `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: next.value })}\n\n`;
      }
    } finally {
      release();
      await events.return(undefined);
    }
  }
  // `connection: close`: a stream's connection ends with it, so nothing keeps it open once the stream
  // is over (a shutdown ends open streams and must not then wait out a keep-alive).
  return reply
    .status(200)
    .header('content-type', 'text/event-stream')
    .header('cache-control', 'no-cache')
    .header('x-accel-buffering', 'no')
    .header('connection', 'close')
    .send(Readable.from(sse()));
}

/** A JSON-RPC error for what a call or a stream threw: A2A's own, or an internal error (logged) that says nothing more. */
function rpcErrorOf(err: unknown, reply: FastifyReply): { code: number; message: string; data?: Record<string, unknown> } {
  if (err instanceof A2AError) return err.toJSONRPCError();
  reply.log.error({ err }, 'A2A call failed');
  return { code: -32603, message: 'internal error' };
}

/** The AdCP task (and JSON-RPC method) a request calls, for the signing policy. */
function callOf(body: unknown): AgentCall {
  if (!isObject(body) || typeof body.method !== 'string') return {};
  const message = isObject(body.params) && isObject(body.params.message) ? body.params.message : {};
  const part = Array.isArray(message.parts) ? message.parts.find((p) => isObject(p) && p.kind === 'data') : undefined;
  const data = isObject(part) && isObject(part.data) ? part.data : {};
  const args = isObject(data.input) ? data.input : isObject(data.parameters) ? data.parameters : {};
  // Through the generic tool, the task it runs is the operation.
  const operation = data.skill === 'call_adcp_agent' && typeof args.task === 'string' ? args.task : typeof data.skill === 'string' ? data.skill : undefined;
  return { protocolMethod: body.method, ...(operation ? { operation } : {}), args };
}
