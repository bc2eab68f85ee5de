import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { App } from '../../services';
import { AppError } from '../../shared/errors';
import { agentCaller, refuseAmbiguousSignedBody, registerProtectedResourceMetadata, type AgentCall } from '../agent-auth';
import { requestOrigin } from '../well-known';
import { callTool, toolList } from './tools';
import { JsonExchangeTransport } from './json-exchange';
import { answerParamsErrorsAsJsonRpc } from './params-errors';
import { strictJsonParser } from '../json-body';
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
  registerProtectedResourceMetadata(fastify, app, MCP_PATH, MCP_PATH, 'adcp-gateway sales agent (MCP)');

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
 * The JSON Schema validator every per-request server shares. A Server left to make its own builds
 * a fresh Ajv instance (vocabularies, meta-schemas) in its constructor: about a quarter of an MCP
 * request's CPU, for a validator this server only uses to check elicitation answers, which it
 * never asks for. Ajv compiles and caches by schema, so sharing one is what it is made for.
 */
let sharedValidator: AjvJsonSchemaValidator | undefined;

async function handlePost(app: App, req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const caller = await agentCaller(app, req, MCP_PATH, callOf(req.body));
  if ('refused' in caller) return caller.refused(reply);
  const { principal } = caller;

  // The origin the request reached, made once: the public origin without PUBLIC_URL, and the URL the SDK is told.
  const reached = app.config.publicUrl ? undefined : requestOrigin(req.protocol, req.host, req.socket);
  const ctx = {
    app,
    ports: app.ports,
    principal,
    requestId: req.id,
    origin: app.config.publicUrl ?? reached!,
    wire: 'adcp3' as const,
    // A `__proto__` or `constructor.prototype` key (dropped by the parser) is refused as the tool's
    // error: the body is valid JSON, and AdCP clients read errors from the tool result.
    ...(req.forbiddenKeys ? { refusal: new AppError('INVALID_REQUEST', 'the request contains a "__proto__" or "constructor.prototype" key, which no field accepts') } : {}),
  };
  return answerMcpPost(
    req,
    reply,
    (server) => {
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolList() }));
      setToolsCallHandler(server, (request) => callTool(request.params.name, request.params.arguments, ctx));
    },
    reached,
  );
}

/** Server.setRequestHandler's parent: the SDK Protocol's, which parses a request's params once and calls the handler. */
const protocolSetRequestHandler = (Object.getPrototypeOf(Server.prototype) as { setRequestHandler: Server['setRequestHandler'] }).setRequestHandler;

/**
 * `tools/call` answered by `call`, registered as the SDK's Protocol registers any handler, under
 * the Server's own override for this one method. The Protocol has already parsed the request
 * against CallToolRequestSchema (and a refusal is answered -32602, see params-errors) when the
 * override parses it again, then parses the handler's result against CallToolResultSchema: zod
 * copies `arguments` and `structuredContent` key by key each time (its record type), the larger
 * part of what the MCP layer allocates a call here, to re-check a request already checked and a
 * result this gateway builds in CallToolResult's shape (tools.ts, toolResult). The override's
 * one other branch, a call asking for a task, never reaches a handler here: these servers declare
 * no tasks capability, so the Protocol refuses such a call first. Used by the route and by the
 * bench's MCP floor, so the floor measures the layer as the gateway runs it.
 */
export function setToolsCallHandler(server: Server, call: (request: CallToolRequest) => Promise<CallToolResult>): void {
  protocolSetRequestHandler.call(server, CallToolRequestSchema, call);
}

/**
 * One POST answered by a fresh MCP Server whose handlers `handle` sets (params its schemas refuse
 * answered -32602, see params-errors), over a JSON exchange for this request alone. Every authenticated /mcp request runs this; so does the bench's MCP floor
 * row, with a constant tool, to measure what it costs.
 */
export async function answerMcpPost(req: FastifyRequest, reply: FastifyReply, handle: (server: Server) => void, origin?: string): Promise<FastifyReply> {
  sharedValidator ??= new AjvJsonSchemaValidator();
  const server = new Server({ name: 'adcp-gateway', version: '0.1.0' }, { capabilities: { tools: {} }, jsonSchemaValidator: sharedValidator });
  handle(server);
  answerParamsErrorsAsJsonRpc(server, req.log);
  const transport = new JsonExchangeTransport();
  await server.connect(transport);
  // We always answer JSON; a client that accepts only JSON (the runner's raw probes) gets it.
  const accept = req.headers.accept ?? '';
  const headers = !accept.includes('text/event-stream') && (accept === '' || /application\/json|\*\/\*/.test(accept)) ? { ...req.headers, accept: 'application/json, text/event-stream' } : req.headers;
  // The request's URL (the SDK hands it to handlers as requestInfo.url): made if one reads it, which none here does.
  const answer = await transport.exchange(headers, req.body, () => new URL(`${origin ?? requestOrigin(req.protocol, req.host, req.socket)}${req.url}`));
  // The server is dropped, not closed: every request it was given has been answered, and it holds
  // no timer, stream or outgoing request. close() would abort the answered handlers' signals and
  // build a ConnectionClosed error, two stack traces per call (~40 us of ~100 for the SDK's part).
  reply.status(answer.status);
  if (answer.body === undefined) return reply.send();
  return reply.header('content-type', 'application/json').send(JSON.stringify(answer.body));
}

/** The AdCP tool (and JSON-RPC method) a request calls, for the signing policy. */
function callOf(body: unknown): AgentCall {
  if (!isObject(body) || typeof body.method !== 'string') return {};
  const params = isObject(body.params) ? body.params : {};
  const tool = body.method === 'tools/call' && typeof params.name === 'string' ? params.name : undefined;
  // Through the generic tool, the task it runs is the operation.
  const args = isObject(params.arguments) ? params.arguments : {};
  const operation = tool === 'call_adcp_agent' && typeof args.task === 'string' ? args.task : tool;
  return { protocolMethod: body.method, ...(operation ? { operation } : {}), args };
}
