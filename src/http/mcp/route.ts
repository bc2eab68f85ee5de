import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { App } from '../../app';
import type { Principal } from '../../application/api-keys';
import { AppError } from '../../shared/errors';
import { authenticate } from '../auth';
import { publicOrigin } from '../well-known';
import { callTool, toolList } from './tools';

export const MCP_PATH = '/mcp';

/**
 * The sales agent over MCP Streamable HTTP (`POST /mcp`), as AdCP buyers and the official
 * storyboard runner reach it. Stateless: every POST is a fresh MCP server bound to the caller's
 * principal, answering plain JSON (never an SSE stream), so a bare `tools/call` with
 * `Accept: application/json` and no `initialize` is answered too (the runner's raw probes send
 * exactly that). The credential is checked before MCP sees the request: none or a bad one is a
 * 401 whose `WWW-Authenticate` names the protected-resource metadata (MCP authorization).
 */
export function registerMcpRoutes(fastify: FastifyInstance, app: App): void {
  fastify.get(`/.well-known/oauth-protected-resource${MCP_PATH}`, async (req, reply) => {
    const metadata = app.oauth.protectedResourceMetadata();
    if (!metadata) return reply.status(503).header('retry-after', '1').send({ error: 'OAuth is not configured yet' });
    return reply
      .header('cache-control', 'public, max-age=3600')
      .header('access-control-allow-origin', '*')
      .send({ ...metadata, resource: `${publicOrigin(app, req)}${MCP_PATH}`, resource_name: 'adcp-gateway sales agent (MCP)' });
  });

  for (const url of [MCP_PATH, `${MCP_PATH}/`]) {
    fastify.post(url, (req, reply) => handlePost(app, req, reply));
    // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
    fastify.route({
      method: ['GET', 'DELETE', 'PUT', 'PATCH'],
      url,
      handler: async (_req, reply) =>
        reply.status(405).header('allow', 'POST').send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; POST JSON-RPC requests' }, id: null }),
    });
  }
}

async function handlePost(app: App, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  let principal: Principal | null;
  try {
    principal = await authenticate(req, app);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'UNAUTHENTICATED') throw err;
    return unauthorized(app, req, reply, 'invalid_token', err.message);
  }
  if (!principal) return unauthorized(app, req, reply, undefined, 'credentials are required: send an sk_ API key or an access token in the Authorization header');

  const server = new Server({ name: 'adcp-gateway', version: '0.1.0' }, { capabilities: { tools: {} } });
  const ctx = { app, principal, requestId: req.id, origin: publicOrigin(app, req), wire: 'adcp3' as const };
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolList(principal) }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => callTool(request.params.name, request.params.arguments, ctx));

  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === 'string') headers.set(name, value);
      else if (Array.isArray(value)) headers.set(name, value.join(', '));
    }
    // We always answer JSON; a client that accepts only JSON (the runner's raw probes) gets it.
    const accept = headers.get('accept') ?? '';
    if (!accept.includes('text/event-stream') && (accept === '' || /application\/json|\*\/\*/.test(accept))) headers.set('accept', 'application/json, text/event-stream');
    const request = new Request(`http://${req.host}${req.url}`, { method: 'POST', headers });
    const response = await transport.handleRequest(request, { parsedBody: req.body });
    reply.status(response.status);
    response.headers.forEach((value, name) => {
      if (name !== 'content-length') reply.header(name, value);
    });
    return reply.send(response.body ? await response.text() : undefined);
  } finally {
    await transport.close().catch(() => {});
    await server.close().catch(() => {});
  }
}

/** RFC 6750 / RFC 9728: where a client finds how to get a token for this resource. */
function unauthorized(app: App, req: FastifyRequest, reply: FastifyReply, error: string | undefined, message: string): FastifyReply {
  const metadata = `${publicOrigin(app, req)}/.well-known/oauth-protected-resource${MCP_PATH}`;
  const params = [`realm="adcp-gateway"`, ...(error ? [`error="${error}"`, `error_description="${message.replace(/["\\]/g, "'")}"`] : []), `resource_metadata="${metadata}"`];
  return reply
    .status(401)
    .header('www-authenticate', `Bearer ${params.join(', ')}`)
    .send({ jsonrpc: '2.0', error: { code: -32028, message, data: { adcp_error: { code: 'AUTH_REQUIRED', message, recovery: 'correctable' } } }, id: null });
}
