import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, JSONRPCMessageSchema, LATEST_PROTOCOL_VERSION, ListToolsRequestSchema, type CallToolRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isPlainRequest, JsonExchangeTransport, type McpHttpAnswer } from '../../src/http/mcp/json-exchange';
import { answerParamsErrorsAsJsonRpc } from '../../src/http/mcp/params-errors';
import { setToolsCallHandler } from '../../src/http/mcp/route';

/**
 * The MCP route carries each POST through JsonExchangeTransport instead of the SDK's
 * WebStandardStreamableHTTPServerTransport (to skip building a Web Request and Response per
 * call). The SDK's transport is the oracle: the same POSTs, to the same Server, must get the same
 * status and the same JSON-RPC body from both, except where the SDK departs from JSON-RPC 2.0
 * (the corrections, each checked against both).
 */
/** `toolsCall: 'route'` registers tools/call as the gateway's route does (setToolsCallHandler), else with the SDK Server's own method. */
function serverWithTools(toolsCall: 'sdk' | 'route' = 'sdk'): Server {
  const server = new Server({ name: 'oracle', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [{ name: 'echo', inputSchema: { type: 'object' } }] }));
  const call = async (request: CallToolRequest): Promise<CallToolResult> => {
    if (request.params.name === 'slow') await new Promise((r) => setTimeout(r, 5));
    if (request.params.name === 'bad_result') return { content: 'not a list' } as never;
    if (request.params.name === 'throws') throw new Error('tool blew up');
    return { content: [{ type: 'text', text: JSON.stringify(request.params.arguments ?? null) }], structuredContent: { got: request.params.arguments ?? null } };
  };
  if (toolsCall === 'route') setToolsCallHandler(server, call);
  else server.setRequestHandler(CallToolRequestSchema, call);
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

async function viaExchange(headers: Record<string, string>, body: unknown, options: { paramsErrors?: boolean; toolsCall?: 'sdk' | 'route' } = {}): Promise<McpHttpAnswer> {
  const server = serverWithTools(options.toolsCall);
  if (options.paramsErrors) answerParamsErrorsAsJsonRpc(server, { error: () => {} });
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
  ['two initializes in a batch', JSON_HEADERS, [initialize(15), initialize(16)]],
  ['an initialize beside a call', JSON_HEADERS, [initialize(17), call(18, 'echo')]],
  ['a batch over the size limit', JSON_HEADERS, Array.from({ length: 101 }, (_, i) => call(i, 'echo'))],
  ['Accept without text/event-stream', { ...JSON_HEADERS, accept: 'application/json' }, call(22, 'echo')],
  ['Accept without application/json', { ...JSON_HEADERS, accept: 'text/event-stream' }, call(23, 'echo')],
  ['a text/plain Content-Type', { ...JSON_HEADERS, 'content-type': 'text/plain; a=application/json' }, call(24, 'echo')],
  ['a JSON Content-Type with a charset', { ...JSON_HEADERS, 'content-type': 'application/json; charset=utf-8' }, call(25, 'echo')],
  ['a supported protocol version header', { ...JSON_HEADERS, 'mcp-protocol-version': '2025-06-18' }, call(26, 'echo')],
  ['an unsupported protocol version header', { ...JSON_HEADERS, 'mcp-protocol-version': '1999-01-01' }, call(27, 'echo')],
  ['an unsupported protocol version on initialize', { ...JSON_HEADERS, 'mcp-protocol-version': '1999-01-01' }, initialize(28)],
  ['a tools/call with _meta', JSON_HEADERS, { jsonrpc: '2.0', id: 31, method: 'tools/call', params: { name: 'echo', arguments: { a: 1 }, _meta: { progressToken: 'p-31' } } }],
  ['a tools/call asking for a task', JSON_HEADERS, { jsonrpc: '2.0', id: 32, method: 'tools/call', params: { name: 'echo', arguments: { a: 1 }, task: { ttl: 60000 } } }],
];

const rpcError = (id: number | null, code: number, message: string) => ({ jsonrpc: '2.0', id, error: { code, message } });

/**
 * Where the SDK's transport departs from JSON-RPC 2.0, JsonExchangeTransport follows JSON-RPC:
 * each case gives what JSON-RPC assigns (from the SDK's answer to what it does serve), and checks
 * that the SDK still answers otherwise (when it no longer does, the case belongs with the others).
 */
const corrections: [name: string, body: unknown, expected: () => Promise<McpHttpAnswer>][] = [
  // §5.1: -32700 is for text that is not JSON; valid JSON that is not a Request object is -32600 (naming a valid id).
  ['not JSON-RPC', { hello: 'world' }, async () => ({ status: 400, body: rpcError(null, -32600, 'Invalid Request: jsonrpc must be "2.0"') })],
  ['a wrong jsonrpc version', { jsonrpc: '1.0', id: 19, method: 'ping' }, async () => ({ status: 400, body: rpcError(19, -32600, 'Invalid Request: jsonrpc must be "2.0"') })],
  ['a null body', null, async () => ({ status: 400, body: rpcError(null, -32600, 'Invalid Request: a JSON-RPC message is an object, not null') })],
  ['params that are not structured', { jsonrpc: '2.0', id: 29, method: 'tools/list', params: 'all' }, async () => ({ status: 400, body: rpcError(29, -32600, 'Invalid Request: params must be an object, not a string') })],
  // Valid JSON-RPC whose params MCP takes only by name: -32602 Invalid params, like any params MCP refuses.
  ['params by position', { jsonrpc: '2.0', id: 30, method: 'tools/list', params: [] }, async () => ({ status: 200, body: rpcError(30, -32602, 'Invalid params: params must be an object, not an array') })],
  // §6: an empty batch is one -32600; a batch is answered with an array, each invalid message with its own error.
  ['an empty batch', [], async () => ({ status: 400, body: rpcError(null, -32600, 'Invalid Request: an empty batch (a batch holds at least one message)') })],
  ['a batch with one invalid message', [call(20, 'echo'), { id: 21 }], async () => ({ status: 200, body: [(await viaSdk(JSON_HEADERS, call(20, 'echo'))).body, rpcError(21, -32600, 'Invalid Request: jsonrpc must be "2.0"')] })],
  ['a batch repeating an id', [call(13, 'echo', { x: 1 }), call(13, 'echo', { x: 2 })], async () => ({ status: 200, body: [(await viaSdk(JSON_HEADERS, call(13, 'echo', { x: 1 }))).body] })],
  ['a batch of a call and a notification', [call(14, 'echo'), { jsonrpc: '2.0', method: 'notifications/initialized' }], async () => ({ status: 200, body: [(await viaSdk(JSON_HEADERS, call(14, 'echo'))).body] })],
];

describe('JsonExchangeTransport answers as JSON-RPC 2.0 says where the SDK transport does not', () => {
  test.each(corrections)('%s', async (_name, body, expected) => {
    const wanted = await expected();
    expect(await viaExchange(JSON_HEADERS, body)).toEqual(wanted);
    expect(await viaSdk(JSON_HEADERS, body)).not.toEqual(wanted);
  });
});

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

/**
 * The route's servers answer params their method's schema refuses as JSON-RPC assigns it, -32602
 * in a sentence; the SDK's server alone answers -32603 with the validator's JSON report (its
 * Protocol parses params before any handler, and answers what the parse throws as an internal
 * error). Anything else a handler throws is -32603 "Internal error", not the error's own words.
 */
describe('answerParamsErrorsAsJsonRpc', () => {
  test.each([
    ['arguments a string', call(40, 'echo', 'x'), 'Invalid params: params.arguments must be an object, not a string'],
    ['arguments an array', call(41, 'echo', [1]), 'Invalid params: params.arguments must be an object, not an array'],
    ['arguments null', call(42, 'echo', null), 'Invalid params: params.arguments must be an object, not null'],
    ['a name that is a number', call(43, 123 as never, {}), 'Invalid params: params.name must be a string, not a number'],
    ['no name', { jsonrpc: '2.0', id: 44, method: 'tools/call', params: {} }, 'Invalid params: params.name is required'],
    ['initialize without its params', { jsonrpc: '2.0', id: 45, method: 'initialize', params: {} }, 'Invalid params: params.protocolVersion is required'],
  ])('%s', async (_name, body, message) => {
    const id = (body as { id: number }).id;
    const sdk = await viaExchange(JSON_HEADERS, body);
    expect(sdk).toMatchObject({ status: 200, body: { id, error: { code: -32603, message: expect.stringContaining('"code": "invalid_type"') } } });
    expect(await viaExchange(JSON_HEADERS, body, { paramsErrors: true })).toEqual({ status: 200, body: rpcError(id, -32602, message) });
  });

  test("a handler's own fault is -32603 Internal error, not in its words", async () => {
    expect((await viaExchange(JSON_HEADERS, call(46, 'throws'))).body).toMatchObject({ error: { code: -32603, message: 'tool blew up' } });
    expect(await viaExchange(JSON_HEADERS, call(46, 'throws'), { paramsErrors: true })).toEqual({ status: 200, body: rpcError(46, -32603, 'Internal error') });
  });
});

/**
 * The route registers tools/call without the SDK Server's second parse of the request and its
 * parse of the result (route.ts, setToolsCallHandler): every answer but a malformed result's (which
 * the gateway never builds) must stay what the Server's own registration answers.
 */
describe('setToolsCallHandler', () => {
  const calls: [string, unknown][] = [
    ['a call', call(50, 'echo', { a: [1, { b: 2 }] })],
    ['a call without arguments', call(51, 'echo')],
    ['a batch of calls', [call(52, 'slow', { x: 1 }), call(53, 'echo', { y: 2 })]],
    ['arguments a string', call(54, 'echo', 'x')],
    ['no name', { jsonrpc: '2.0', id: 55, method: 'tools/call', params: {} }],
    ['a call asking for a task', { jsonrpc: '2.0', id: 56, method: 'tools/call', params: { name: 'echo', task: { ttl: 60000 } } }],
    ['a tool that throws', call(57, 'throws')],
  ];
  test.each(calls)('%s', async (_name, body) => {
    for (const paramsErrors of [false, true]) {
      const sdk = await viaExchange(JSON_HEADERS, body, { paramsErrors, toolsCall: 'sdk' });
      expect(await viaExchange(JSON_HEADERS, body, { paramsErrors, toolsCall: 'route' })).toEqual(sdk);
    }
  });

  test('a call answers the same JSON text, member order included', async () => {
    const text = async (toolsCall: 'sdk' | 'route') => JSON.stringify((await viaExchange(JSON_HEADERS, call(58, 'echo', { z: 1, a: 2 }), { toolsCall })).body);
    expect(await text('route')).toBe(await text('sdk'));
  });
});

/** What the exchange takes as a request without zod must be exactly what JSONRPCMessageSchema takes, unchanged. */
describe('isPlainRequest', () => {
  const messages: unknown[] = [
    call(1, 'echo', { a: 1 }),
    call('s', 'echo'),
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'ping', params: {} },
    { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'x', _meta: { progressToken: 1 } } },
    { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'x', _meta: { progressToken: {} } } },
    { jsonrpc: '2.0', id: 1.5, method: 'ping' },
    { jsonrpc: '2.0', id: 2 ** 60, method: 'ping' },
    { jsonrpc: '2.0', id: null, method: 'ping' },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 6, method: 'ping', extra: 1 },
    { jsonrpc: '2.0', id: 7, method: 'ping', params: [] },
    { jsonrpc: '2.0', id: 8, method: 'ping', params: null },
    { jsonrpc: '2.0', id: 9, method: 7 },
    { jsonrpc: '1.0', id: 10, method: 'ping' },
    { jsonrpc: '2.0', id: 11, result: {} },
    [call(12, 'echo')],
    null,
    'ping',
  ];
  test.each(messages.map((m) => [JSON.stringify(m), m]))('%s', (_name, m) => {
    const parsed = JSONRPCMessageSchema.safeParse(m);
    if (isPlainRequest(m)) {
      expect(parsed.success).toBe(true);
      expect(parsed.data).toEqual(m);
    }
  });
  test('takes the common request and leaves _meta to the schema', () => {
    expect(isPlainRequest(call(1, 'echo', { a: 1 }))).toBe(true);
    expect(isPlainRequest({ jsonrpc: '2.0', id: 2, method: 'tools/list' })).toBe(true);
    expect(isPlainRequest({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'x', _meta: {} } })).toBe(false);
    expect(isPlainRequest({ jsonrpc: '2.0', id: 6, method: 'ping', extra: 1 })).toBe(false);
  });
});
