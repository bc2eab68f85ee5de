import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JsonRpcTransportHandler } from '@a2a-js/sdk/server';
import type { App } from '../../app';
import { AppError } from '../../shared/errors';
import { isObject } from '../../shared/objects';
import { agentCaller, refuseAmbiguousSignedBody } from '../agent-auth';
import { strictJsonParser } from '../json-body';
import { publicOrigin } from '../well-known';
import { A2A_PATH, agentCard } from './card';
import { CompletedTasks } from './completed-tasks';
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
  for (const url of CARD_PATHS) {
    fastify.get(url, async (req, reply) =>
      reply.header('cache-control', 'public, max-age=300').header('access-control-allow-origin', '*').send(agentCard(app, publicOrigin(app, req))),
    );
  }
  // RFC 9728 metadata for the endpoint and for the agent's base URL (where A2A clients are pointed;
  // a client that appends the base URL's path `/` asks with a trailing slash).
  for (const path of [A2A_PATH, '', '/']) {
    fastify.get(`/.well-known/oauth-protected-resource${path}`, async (req, reply) => {
      const metadata = app.oauth.protectedResourceMetadata();
      if (!metadata) return reply.status(503).header('retry-after', '1').send({ error: 'OAuth is not configured yet' });
      return reply
        .header('cache-control', 'public, max-age=3600')
        .header('access-control-allow-origin', '*')
        .send({ ...metadata, resource: `${publicOrigin(app, req)}${path === '/' ? '' : path}`, resource_name: 'adcp-gateway sales agent (A2A)' });
    });
  }

  void fastify.register(async (a2a) => {
    a2a.removeContentTypeParser('application/json');
    a2a.addContentTypeParser('application/json', { parseAs: 'string' }, strictJsonParser(a2a, { forbiddenKeys: 'flag' }));
    // The endpoint the card names, and the agent's base URL: A2A clients (and the official runner's
    // raw probes, with `--protocol a2a`) are pointed at the origin.
    for (const url of [A2A_PATH, `${A2A_PATH}/`, '/']) {
      a2a.post(url, { onRequest: (req, reply, done) => refuseAmbiguousSignedBody(app, req, reply, done) }, (req, reply) => handlePost(app, completed, req, reply));
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

async function handlePost(app: App, completed: CompletedTasks, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const caller = await agentCaller(app, req, req.url.startsWith(A2A_PATH) ? A2A_PATH : '', callOf(req.body));
  if ('refused' in caller) return caller.refused(reply);
  const origin = publicOrigin(app, req);
  const ctx = {
    app,
    principal: caller.principal,
    requestId: req.id,
    origin,
    wire: 'adcp3' as const,
    // A `__proto__` or `constructor.prototype` key (dropped by the parser) is refused as the task's error.
    ...(req.forbiddenKeys ? { refusal: new AppError('INVALID_REQUEST', 'the request contains a "__proto__" or "constructor.prototype" key, which no field accepts') } : {}),
  };
  const transport = new JsonRpcTransportHandler(new AdcpA2AHandler(agentCard(app, origin), ctx, completed));
  const answer = await transport.handle(req.body);
  if (Symbol.asyncIterator in answer) {
    // Streaming methods are refused while the card says streaming: false; never reached.
    throw new AppError('UNAVAILABLE', 'streaming is not offered');
  }
  // JSON-RPC answers its own errors in the body; the HTTP exchange itself succeeded.
  return reply.status(200).type('application/json').send(answer);
}

/** The AdCP task (and JSON-RPC method) a request calls, for the signing policy. */
function callOf(body: unknown): { operation?: string; protocolMethod?: string } {
  if (!isObject(body) || typeof body.method !== 'string') return {};
  const message = isObject(body.params) && isObject(body.params.message) ? body.params.message : {};
  const part = Array.isArray(message.parts) ? message.parts.find((p) => isObject(p) && p.kind === 'data') : undefined;
  const data = isObject(part) && isObject(part.data) ? part.data : {};
  const args = isObject(data.input) ? data.input : isObject(data.parameters) ? data.parameters : {};
  // Through the generic tool, the task it runs is the operation.
  const operation = data.skill === 'call_adcp_agent' && typeof args.task === 'string' ? args.task : typeof data.skill === 'string' ? data.skill : undefined;
  return { protocolMethod: body.method, ...(operation ? { operation } : {}) };
}
