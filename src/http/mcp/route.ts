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
import { strictJsonParser } from '../json-body';
import { hasSeveralValues, SignatureVerificationError } from '../../signing/signature-verifier';
import { isObject } from '../../shared/objects';

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

  void fastify.register(async (mcp) => {
    // Forbidden keys are refused as a tool error, in the shape AdCP clients read (see handlePost).
    mcp.removeContentTypeParser('application/json');
    mcp.addContentTypeParser('application/json', { parseAs: 'string' }, strictJsonParser(mcp, { forbiddenKeys: 'flag' }));
    for (const url of [MCP_PATH, `${MCP_PATH}/`]) {
      mcp.post(url, { onRequest: (req, reply, done) => refuseAmbiguousSignedBody(app, req, reply, done) }, (req, reply) => handlePost(app, req, reply));
      // Stateless: no server-initiated stream to open (GET) and no session to end (DELETE).
      mcp.route({
        method: ['GET', 'DELETE', 'PUT', 'PATCH'],
        url,
        handler: async (_req, reply) =>
          reply.status(405).header('allow', 'POST').send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; POST JSON-RPC requests' }, id: null }),
      });
    }
  });
}

/**
 * A signed request whose Content-Type has two values is malformed (step 1 of the request
 * checklist): answered as such here, since the body parser would otherwise refuse the media type
 * (415) before the signature is looked at.
 */
function refuseAmbiguousSignedBody(app: App, req: FastifyRequest, reply: FastifyReply, done: () => void): void {
  const contentType = req.headers['content-type'];
  if (!app.requestSigning || req.headers['signature-input'] === undefined || contentType === undefined || !hasSeveralValues(contentType)) return done();
  signatureRefused(reply, new SignatureVerificationError('request_signature_header_malformed', '1', 'Content-Type has more than one value'));
}

async function handlePost(app: App, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  // A signed request is judged by its signature first: a valid one is the caller's credential, a
  // bad one is refused whatever else it carries, and an unsigned call the signing policy
  // requires signed is refused before any bearer token is looked at.
  let signer: Principal | undefined;
  if (app.requestSigning) {
    try {
      const outcome = await app.requestSigning.verify(req, `${publicOrigin(app, req)}${req.url}`, req.rawBody ?? '', callOf(req.body));
      if ('signer' in outcome) signer = outcome.signer;
    } catch (err) {
      if (!(err instanceof SignatureVerificationError)) throw err;
      return signatureRefused(reply, err);
    }
  }
  let principal: Principal | null;
  try {
    principal = await authenticate(req, app);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'UNAUTHENTICATED') throw err;
    return unauthorized(app, req, reply, 'invalid_token', err.message);
  }
  if (signer && principal && principal.org !== signer.org) {
    return signatureRefused(reply, new SignatureVerificationError('request_signature_key_unknown', '7', `the signing key is not one of ${principal.org}'s`));
  }
  principal ??= signer ?? null;
  if (!principal) return unauthorized(app, req, reply, undefined, 'credentials are required: send an sk_ API key or an access token in the Authorization header');
  if (!signer && app.requestSigning?.requiresSignature(principal.org)) {
    return signatureRefused(reply, new SignatureVerificationError('request_signature_required', '0', `${principal.org} signs its calls: this one is unsigned`));
  }

  const server = new Server({ name: 'adcp-gateway', version: '0.1.0' }, { capabilities: { tools: {} } });
  const ctx = {
    app,
    principal,
    requestId: req.id,
    origin: publicOrigin(app, req),
    wire: 'adcp3' as const,
    // A `__proto__` or `constructor.prototype` key (dropped by the parser) is refused as the tool's
    // error: the body is valid JSON, and AdCP clients read errors from the tool result.
    ...(req.forbiddenKeys ? { refusal: new AppError('INVALID_REQUEST', 'the request contains a "__proto__" or "constructor.prototype" key, which no field accepts') } : {}),
  };
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

/** The AdCP tool (and JSON-RPC method) a request calls, for the signing policy. */
function callOf(body: unknown): { operation?: string; protocolMethod?: string } {
  if (!isObject(body) || typeof body.method !== 'string') return {};
  const params = isObject(body.params) ? body.params : {};
  const tool = body.method === 'tools/call' && typeof params.name === 'string' ? params.name : undefined;
  // Through the generic tool, the task it runs is the operation.
  const args = isObject(params.arguments) ? params.arguments : {};
  const operation = tool === 'call_adcp_agent' && typeof args.task === 'string' ? args.task : tool;
  return { protocolMethod: body.method, ...(operation ? { operation } : {}) };
}

/** A signature that does not verify: 401 with `WWW-Authenticate: Signature error="<code>"` (security.mdx). */
function signatureRefused(reply: FastifyReply, err: SignatureVerificationError): FastifyReply {
  const message = `request signature refused: ${err.message}`;
  return reply
    .status(401)
    .header('www-authenticate', `Signature error="${err.code}"`)
    .send({ jsonrpc: '2.0', error: { code: -32028, message, data: { adcp_error: { code: 'AUTH_REQUIRED', message, recovery: 'correctable', details: { signature_error: err.code } } } }, id: null });
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
