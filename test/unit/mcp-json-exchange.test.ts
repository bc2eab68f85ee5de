import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, LATEST_PROTOCOL_VERSION, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { JsonExchangeTransport, type McpHttpAnswer } from '../../src/http/mcp/json-exchange';

/**
 * The MCP route carries each POST through JsonExchangeTransport instead of the SDK's
 * WebStandardStreamableHTTPServerTransport (to skip building a Web Request and Response per
 * call). The SDK's transport is the oracle: the same POSTs, to the same Server, must get the same
 * status and the same JSON-RPC body from both.
 */
function serverWithTools(): Server {
  const server = new Server({ name: 'oracle', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    if (request.params.name === 'slow') await new Promise((r) => setTimeout(r, 5));
    if (request.params.name === 'bad_result') return { content: 'not a list' } as never;
    if (request.params.name === 'throws') throw new Error('tool blew up');
    return { content: [{ type: 'text', text: JSON.stringify(request.params.arguments ?? null) }], structuredContent: { got: request.params.arguments ?? null } };
  });
  return server;
}

const URL_ = 'http://127.0.0.1/mcp';
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

async function viaSdk(headers: Record<string, string>, body: unknown): Promise<McpHttpAnswer> {
  const server = serverWithTools();
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const res = await transport.handleRequest(new Request(URL_, { method: 'POST', headers }), { parsedBody: body });
    const text = await res.text();
    return { status: res.status, ...(text ? { body: JSON.parse(text) } : {}) };
  } finally {
    await server.close();
  }
}

async function viaExchange(headers: Record<string, string>, body: unknown): Promise<McpHttpAnswer> {
  const server = serverWithTools();
  const transport = new JsonExchangeTransport();
  await server.connect(transport);
  try {
    const answer = await transport.exchange(headers, body, new URL(URL_));
    // What the route sends: the body as JSON text.
    return answer.body === undefined ? { status: answer.status } : { status: answer.status, body: JSON.parse(JSON.stringify(answer.body)) };
  } finally {
    await server.close();
  }
}

const call = (id: number | string, name: string, args?: unknown) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, ...(args === undefined ? {} : { arguments: args }) } });
const initialize = (id: number) => ({ jsonrpc: '2.0', id, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 't', version: '1' } } });

const cases: [string, Record<string, string>, unknown][] = [
  ['a tools/call', JSON_HEADERS, call(1, 'echo', { a: 1 })],
  ['a tools/call with a string id', JSON_HEADERS, call('req-7', 'echo', { nested: { b: [1, 2] } })],
  ['tools/list', JSON_HEADERS, { jsonrpc: '2.0', id: 2, method: 'tools/list' }],
  ['initialize', JSON_HEADERS, initialize(3)],
  ['initialize with an old protocol version', JSON_HEADERS, { ...initialize(4), params: { ...initialize(4).params, protocolVersion: '2024-11-05' } }],
  ['ping', JSON_HEADERS, { jsonrpc: '2.0', id: 5, method: 'ping' }],
  ['an unknown method', JSON_HEADERS, { jsonrpc: '2.0', id: 6, method: 'resources/list' }],
  ['tools/call without a name', JSON_HEADERS, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: {} }],
  ['a tool that throws', JSON_HEADERS, call(8, 'throws')],
  ['a tool whose result is malformed', JSON_HEADERS, call(9, 'bad_result')],
  ['a notification alone', JSON_HEADERS, { jsonrpc: '2.0', method: 'notifications/initialized' }],
  ['a response alone', JSON_HEADERS, { jsonrpc: '2.0', id: 10, result: {} }],
  ['a batch of two calls, the first slower', JSON_HEADERS, [call(11, 'slow', { x: 1 }), call(12, 'echo', { y: 2 })]],
  ['a batch repeating an id', JSON_HEADERS, [call(13, 'echo', { x: 1 }), call(13, 'echo', { x: 2 })]],
  ['a batch of a call and a notification', JSON_HEADERS, [call(14, 'echo'), { jsonrpc: '2.0', method: 'notifications/initialized' }]],
  ['two initializes in a batch', JSON_HEADERS, [initialize(15), initialize(16)]],
  ['an initialize beside a call', JSON_HEADERS, [initialize(17), call(18, 'echo')]],
  ['a batch over the size limit', JSON_HEADERS, Array.from({ length: 101 }, (_, i) => call(i, 'echo'))],
  ['not JSON-RPC', JSON_HEADERS, { hello: 'world' }],
  ['a wrong jsonrpc version', JSON_HEADERS, { jsonrpc: '1.0', id: 19, method: 'ping' }],
  ['a batch with one invalid message', JSON_HEADERS, [call(20, 'echo'), { id: 21 }]],
  ['an empty batch', JSON_HEADERS, []],
  ['a null body', JSON_HEADERS, null],
  ['Accept without text/event-stream', { ...JSON_HEADERS, accept: 'application/json' }, call(22, 'echo')],
  ['Accept without application/json', { ...JSON_HEADERS, accept: 'text/event-stream' }, call(23, 'echo')],
  ['a text/plain Content-Type', { ...JSON_HEADERS, 'content-type': 'text/plain; a=application/json' }, call(24, 'echo')],
  ['a JSON Content-Type with a charset', { ...JSON_HEADERS, 'content-type': 'application/json; charset=utf-8' }, call(25, 'echo')],
  ['a supported protocol version header', { ...JSON_HEADERS, 'mcp-protocol-version': '2025-06-18' }, call(26, 'echo')],
  ['an unsupported protocol version header', { ...JSON_HEADERS, 'mcp-protocol-version': '1999-01-01' }, call(27, 'echo')],
  ['an unsupported protocol version on initialize', { ...JSON_HEADERS, 'mcp-protocol-version': '1999-01-01' }, initialize(28)],
];

describe('JsonExchangeTransport answers as the SDK transport does', () => {
  test.each(cases)('%s', async (_name, headers, body) => {
    const expected = await viaSdk(headers, body);
    const actual = await viaExchange(headers, body);
    expect(actual).toEqual(expected);
  });

  test('the cases cover every status the transport answers', async () => {
    const statuses = new Set<number>();
    for (const [, headers, body] of cases) statuses.add((await viaSdk(headers, body)).status);
    expect([...statuses].sort()).toEqual([200, 202, 400, 406, 415]);
  });
});
