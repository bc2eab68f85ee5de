import fc from 'fast-check';
import { issueApiKey } from '../../src/application/api-keys';
import { startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { freshBudgetWindow } from '../support/limits';
import { anyJson, damaged, EVERY_JSON_TYPE, EVERY_NON_OBJECT, hostileBodies, isObject, leakIn, safeJson, validCreateMediaBuy, validRequests, type Json } from '../support/malformed-corpus';
import { sdkClientSteps } from '../support/sdk-client';

/**
 * The malformed-input suite's probe corpus (test/support/malformed-corpus.ts, which REST and
 * GraphQL are fuzzed with) over MCP and A2A, where every answer is JSON-RPC 2.0: its codes as
 * JSON-RPC assigns them (-32700 text that is not JSON, -32600 a message that is not a Request
 * object, -32601 a method the binding does not have, -32602 params it cannot take), a domain
 * fault as the binding's AdCP error (an `isError` tool result over MCP, an `error` artifact over
 * A2A), a notification never answered; never -32603, a 5xx, or a message in the engine's own
 * words. Refusals made before JSON-RPC (credentials, limits) name the request they refuse.
 */

type Gateway = Awaited<ReturnType<typeof startTestGateway>>;
type Id = string | number | null;

const RUNS = Number(process.env.FUZZ_RUNS ?? 60);
if (!Number.isSafeInteger(RUNS) || RUNS < 1) throw new Error(`FUZZ_RUNS must be a positive integer, not ${process.env.FUZZ_RUNS}`);

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

/** A POST of JSON (or, as `{raw}`, of text) to an agent endpoint, with a key. */
async function post(url: string, body: Json | { raw: string }, key: string | null, headers: Record<string, string> = {}): Promise<Answer> {
  const text = isObject(body) && typeof body.raw === 'string' && Object.keys(body).length === 1 ? body.raw : JSON.stringify(body);
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers }, body: text });
  const answer = await res.text();
  // A stream's first event is the answer (a pending task would stream for minutes).
  const first = res.headers.get('content-type')?.startsWith('text/event-stream') ? (/^data: (.*)$/m.exec(answer)?.[1] ?? '') : answer;
  return { status: res.status, headers: res.headers, text: answer, json: safeJson(first) };
}

/**
 * What no answer may be: a 5xx, -32603, a JSON-RPC error without a message, or any error message
 * (JSON-RPC's, or an AdCP error's in a tool result or a task artifact) in the engine's own words.
 */
function expectNoFault(where: unknown, a: Answer): void {
  const at = () => `${JSON.stringify(where).slice(0, 300)} → ${a.status} ${a.text.slice(0, 400)}`;
  if (a.status >= 500) throw new Error(`5xx: ${at()}`);
  if (a.status === 204 || a.status === 202) {
    if (a.text !== '') throw new Error(`a body on a ${a.status}: ${at()}`);
    return;
  }
  const messages = Array.isArray(a.json) ? a.json : [a.json];
  for (const m of messages) {
    if (!isObject(m) || m.jsonrpc !== '2.0' || !('id' in m) || 'result' in m === 'error' in m) throw new Error(`not a JSON-RPC 2.0 response: ${at()}`);
    const texts: unknown[] = [];
    if (isObject(m.error)) {
      if (!Number.isInteger(m.error.code) || typeof m.error.message !== 'string' || m.error.message === '') throw new Error(`a JSON-RPC error without a code and message: ${at()}`);
      if (m.error.code === -32603) throw new Error(`-32603: ${at()}`);
      texts.push(m.error.message);
    }
    const result = m.result as any;
    // MCP: a tool's error; A2A: a call's "error" artifact. Either carries AdCP's error.
    const adcp = result?.isError ? result.structuredContent?.adcp_error : result?.artifacts?.[0]?.name === 'error' ? result.artifacts[0].parts.at(-1)?.data?.adcp_error : undefined;
    if (result?.isError || result?.artifacts?.[0]?.name === 'error') {
      if (!isObject(adcp) || typeof adcp.code !== 'string' || !/^[A-Z][A-Z0-9_]*$/.test(adcp.code) || typeof adcp.message !== 'string' || adcp.message === '') throw new Error(`an AdCP error without a code and message: ${at()}`);
      texts.push(adcp.message);
    }
    for (const text of texts) {
      const leak = leakIn(String(text));
      if (leak) throw new Error(`an internal message ("${leak}"): ${at()}`);
    }
  }
}

/** A JSON-RPC error answer: no fault, this code, the id it must name, and this HTTP status (or one of these). */
function expectRpcError(where: unknown, a: Answer, code: number, id: Id, status: number | number[] = 200): void {
  expectNoFault(where, a);
  const statuses = Array.isArray(status) ? status : [status];
  expect({ where, status: statuses.includes(a.status) ? statuses : a.status, code: a.json?.error?.code, id: a.json?.id }).toEqual({ where, status: statuses, code, id });
}

/** `value`, when it is one of `allowed`: for toEqual, which says which it was when it is not. */
const oneOf = <T>(value: T, allowed: readonly T[]): T | readonly T[] => (allowed.includes(value) ? allowed : value);

const call = (name: unknown, args: unknown, id: Id = 1) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
let messages = 0;
const message = (parts: unknown) => ({ kind: 'message', role: 'user', messageId: `m-${++messages}`, parts });
const send = (parts: unknown, id: Id = 1, method = 'message/send') => ({ jsonrpc: '2.0', id, method, params: { message: message(parts) } });
const dataPart = (data: unknown) => ({ kind: 'data', data });
const ask = (skill: unknown, input: unknown, id: Id = 1) => send([dataPart({ skill, input })], id);

/**
 * The values of every JSON type a request carries to its handler: a NUL is refused with the body
 * before JSON-RPC (-32600, see its own test), wherever it is.
 */
const withoutNul = (list: readonly [string, Json][]) => list.filter(([, v]) => !JSON.stringify(v).includes('\\u0000'));
const TYPES = withoutNul(EVERY_JSON_TYPE);
const NON_OBJECTS = withoutNul(EVERY_NON_OBJECT);
const hasNul = (body: Json) => JSON.stringify(body).includes('\\u0000');

/** The codes a malformed A2A call may get: JSON-RPC's, and A2A's task-not-found. */
const RPC_CODES = [-32700, -32600, -32601, -32602, -32001];

/** The tools the corpus is sent to as arguments: reads and writes. */
const REPRESENTATIVE = ['get_products', 'create_media_buy', 'update_media_buy', 'sync_creatives', 'get_media_buys', 'list_creatives', 'tasks_get'];
const MUTATING = new Set(['create_media_buy', 'update_media_buy', 'sync_creatives']);

/**
 * A valid request of a mutating tool carries a placeholder idempotency_key (AdCP 3.0 requires one),
 * replaced by a fresh key in each damaged copy that kept it: the damage, not a replay, is judged.
 */
const KEY_PLACEHOLDER = 'fuzz-rpc-idempotency-key';
let keys = 0;
const withFreshKey = (args: Json): Json => (isObject(args) && args.idempotency_key === KEY_PLACEHOLDER ? { ...args, idempotency_key: `fuzz-rpc-${++keys}-0123456789abcdef` } : args);
const corpusFor = (valid: Record<string, Json>, tool: string) => damaged(MUTATING.has(tool) ? { ...valid, idempotency_key: KEY_PLACEHOLDER } : valid).map(withFreshKey);

describe('MCP and A2A: the malformed-input corpus answers JSON-RPC 2.0 errors, never -32603, a 5xx or an internal message', () => {
  let gw: Gateway;
  let buyer: string;
  let valid: Record<string, Record<string, Json>>;
  const mcp = (body: Json | { raw: string }, key: string | null = buyer) => post(`${gw.url}/mcp`, body, key);
  const a2a = (body: Json | { raw: string }, key: string | null = buyer) => post(`${gw.url}/a2a`, body, key);

  beforeAll(async () => {
    gw = await startTestGateway();
    buyer = (await issueApiKey(gw.app.store, { org: 'fuzz-rpc', role: 'buyer' }, { now: new Date().toISOString(), principal: 'test' })).key;
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 15_000, 'readyz');
    const create = validCreateMediaBuy();
    const rest = (task: string, body: Json) => fetch(`${gw.url}/api/tasks/${task}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<any>);
    const buy = await rest('create_media_buy', create);
    const pending = await rest('create_media_buy', { ...create, buyer_ref: 'fuzz-ctv', packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }] });
    expect({ buy: typeof buy.media_buy_id, task: typeof pending.task_id }).toEqual({ buy: 'string', task: 'string' });
    valid = validRequests({ create, mediaBuyId: buy.media_buy_id, packageId: buy.packages[0].package_id, taskId: pending.task_id, gatewayHost: new URL(gw.url).host });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  describe('MCP', () => {
    it('JSON-RPC 2.0 envelopes: text that is not JSON is -32700; a message that is not a Request object -32600, naming its id when it has a valid one', async () => {
      for (const raw of ['{"jsonrpc": "2.0", "id": 1, "method": ', '', '[1,', '{"a":1}{']) expectRpcError({ raw }, await mcp({ raw }), -32700, null, 400);
      // Valid JSON, but no Request object: every JSON type but the object and the array.
      for (const [label, body] of EVERY_JSON_TYPE.filter(([, v]) => !isObject(v) && !Array.isArray(v))) expectRpcError(label, await mcp(body), -32600, null, 400);
      for (const body of [{}, { a: 1 }, { jsonrpc: '2.0' }, { jsonrpc: '2.0', id: 1 }, { jsonrpc: '1.0', id: 1, method: 'ping' }, { id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 1, method: 'ping', extra: true }]) {
        expectRpcError(body, await mcp(body), -32600, isObject(body) && typeof body.id === 'number' ? body.id : null, 400);
      }
      for (const [label, method] of TYPES.filter(([, v]) => typeof v !== 'string')) expectRpcError(`method: ${label}`, await mcp({ jsonrpc: '2.0', id: 7, method }), -32600, 7, 400);
      // MCP ids are strings or integers, never null; one that is not cannot be named.
      for (const [label, id] of TYPES.filter(([, v]) => typeof v !== 'string' && !Number.isSafeInteger(v))) expectRpcError(`id: ${label}`, await mcp({ jsonrpc: '2.0', id, method: 'ping' }), -32600, null, 400);
      // params is structured (JSON-RPC §4.2): anything else makes an invalid Request; an array is
      // JSON-RPC, but MCP takes params by name.
      for (const [label, params] of TYPES.filter(([, v]) => v === null || typeof v !== 'object')) expectRpcError(`params: ${label}`, await mcp({ jsonrpc: '2.0', id: 8, method: 'tools/list', params }), -32600, 8, 400);
      const positional = await mcp({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: [1] });
      expectRpcError('params: an array', positional, -32602, 9);
      expect(positional.json.error.message).toBe('Invalid params: params must be an object, not an array');
    });

    it('an unknown method is -32601 with or without params; a notification (no id) is never answered', async () => {
      for (const params of [undefined, {}, { name: 'x' }]) expectRpcError({ params }, await mcp({ jsonrpc: '2.0', id: 'u1', method: 'no/such/method', ...(params ? { params } : {}) }), -32601, 'u1');
      const notifications = [
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { jsonrpc: '2.0', method: 'no/such/method' },
        { jsonrpc: '2.0', method: 'tools/call', params: { name: 'get_products', arguments: 'x' } },
        { jsonrpc: '2.0', method: 'tools/call', params: [1] },
      ];
      for (const n of notifications) {
        const a = await mcp(n);
        expectNoFault(n, a);
        expect({ n, status: a.status, text: a.text }).toEqual({ n, status: 202, text: '' });
      }
    });

    it('tools/call whose arguments are not an object, or whose name is not a string, is -32602 naming the member (not -32603 with a validator dump)', async () => {
      for (const tool of ['get_products', 'create_media_buy', 'call_adcp_agent', 'no_such_tool']) {
        for (const [label, args] of NON_OBJECTS) {
          const a = await mcp(call(tool, args, `${tool}-${label}`));
          expectRpcError({ tool, arguments: label }, a, -32602, `${tool}-${label}`);
          expect(a.json.error.message).toMatch(/^Invalid params: params\.arguments must be an object, not (a|an|null)\b/);
        }
      }
      for (const [label, name] of TYPES.filter(([, v]) => typeof v !== 'string')) {
        const a = await mcp(call(name, {}, 3));
        expectRpcError({ name: label }, a, -32602, 3);
        expect(a.json.error.message).toMatch(/^Invalid params: params\.name must be a string, not /);
      }
      const nameless = await mcp({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { arguments: {} } });
      expectRpcError('no name', nameless, -32602, 4);
      expect(nameless.json.error.message).toBe('Invalid params: params.name is required');
      // The same for the SDK's other handlers: initialize without what it needs.
      expectRpcError('initialize', await mcp({ jsonrpc: '2.0', id: 5, method: 'initialize', params: { protocolVersion: 7 } }), -32602, 5);
    });

    it('an empty batch is one -32600 (JSON-RPC 2.0 §6); in a batch each message gets its own answer, a notification none', async () => {
      const empty = await mcp([]);
      expectRpcError('[]', empty, -32600, null, 400);
      const invalid = await mcp([1, 2, 3]);
      expectNoFault('[1,2,3]', invalid);
      expect({ status: invalid.status, answers: invalid.json.map((m: any) => [m.id, m.error.code]) }).toEqual({ status: 400, answers: [[null, -32600], [null, -32600], [null, -32600]] });
      const mixed = await mcp([{ jsonrpc: '2.0', id: 'a', method: 'tools/list' }, 1, { jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 'b', method: 'nope' }, call('get_products', 'x', 'c'), call('get_products', { brief: 'video' }, 'd')]);
      expectNoFault('mixed batch', mixed);
      expect({ status: mixed.status, answers: mixed.json.map((m: any) => [m.id, m.error?.code ?? 'result']) }).toEqual({
        status: 200,
        answers: [['a', 'result'], [null, -32600], ['b', -32601], ['c', -32602], ['d', 'result']],
      });
    });

    it('the corpus as tool arguments (damaged valid requests, arbitrary JSON): a tool result, the AdCP error of a domain fault, or -32602', async () => {
      for (const tool of REPRESENTATIVE) {
        await fc.assert(
          fc.asyncProperty(corpusFor(valid[tool]!, tool), async (args) => {
            const a = await mcp(call(tool, args, 'c'));
            expectNoFault({ tool, args }, a);
            if (a.json.error) expect({ tool, args, code: a.json.error.code }).toEqual({ tool, args, code: hasNul(args) ? -32600 : -32602 });
            else expect(a.json.id).toBe('c');
          }),
          { numRuns: RUNS },
        );
      }
      // Arbitrary JSON as the name, the arguments, the params, the id and the whole message.
      await fc.assert(
        fc.asyncProperty(anyJson, anyJson, anyJson, async (name, args, params) => {
          for (const body of [call(name, args), { jsonrpc: '2.0', id: 2, method: 'tools/call', params }, { jsonrpc: '2.0', id: name, method: 'tools/list' }, params]) {
            const a = await mcp(body);
            expectNoFault(body, a);
          }
        }),
        { numRuns: RUNS },
      );
    }, 300_000);

    it('hostile bodies: deep, not JSON, not an object, proto keys, huge, oversized', async () => {
      for (const [label, raw] of hostileBodies(valid.create_media_buy!)) {
        for (const body of [raw, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_media_buy","arguments":${raw || 'null'}}}`]) {
          const a = await mcp({ raw: body });
          expectNoFault(label, a);
        }
      }
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    }, 120_000);
  });

  it('a NUL anywhere in a body is refused with the body, before JSON-RPC: -32600, id null, 400', async () => {
    for (const body of [call('get_products', { brief: 'a\u0000b' }, 1), call('get_products', '\u0000', 2), ask('get_products', { brief: '\u0000' }, 3), send('\u0000', 4)]) {
      for (const path of ['/mcp', '/a2a']) {
        const a = await post(`${gw.url}${path}`, body, buyer);
        expectRpcError({ path, body }, a, -32600, null, 400);
        expect(a.json.error.message).toBe('request body contains U+0000 (NUL), which no field accepts');
      }
    }
  });

  describe('A2A', () => {
    it('JSON-RPC 2.0 envelopes: -32700, -32600 naming a valid id, -32601 with or without params, -32602 for params that are not an object', async () => {
      expectRpcError('not JSON', await a2a({ raw: '{"jsonrpc":"2.0","id":1,"method":"message/send"' }), -32700, null, 400);
      for (const [label, body] of EVERY_JSON_TYPE.filter(([, v]) => !isObject(v) && !Array.isArray(v))) expectRpcError(label, await a2a(body), -32600, null, [200, 400]);
      for (const body of [{}, { jsonrpc: '1.0', id: 1, method: 'tasks/get', params: { id: 'x' } }, { id: 1, method: 'tasks/get' }]) expectRpcError(body, await a2a(body), -32600, isObject(body) && typeof body.id === 'number' ? body.id : null);
      for (const [label, method] of TYPES.filter(([, v]) => typeof v !== 'string')) expectRpcError(`method: ${label}`, await a2a({ jsonrpc: '2.0', id: 7, method }), -32600, 7);
      // A2A ids: a string, a number without a fraction, or null (A2A 0.3 §6.11.1). Anything else cannot be named.
      for (const [label, id] of TYPES.filter(([, v]) => v !== null && typeof v !== 'string' && !Number.isSafeInteger(v))) {
        expectRpcError(`id: ${label}`, await a2a({ jsonrpc: '2.0', id, method: 'tasks/get', params: { id: 'x' } }), -32600, null);
      }
      for (const [label, params] of TYPES.filter(([, v]) => v === null || typeof v !== 'object')) expectRpcError(`params: ${label}`, await a2a({ jsonrpc: '2.0', id: 8, method: 'message/send', params }), -32600, 8);
      for (const params of [undefined, {}, [1]]) expectRpcError({ unknown: params }, await a2a({ jsonrpc: '2.0', id: 'u', method: 'tools/call', ...(params ? { params } : {}) }), -32601, 'u');
      for (const method of ['message/send', 'message/stream', 'tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'tasks/pushNotificationConfig/list']) {
        expectRpcError({ method, params: 'none' }, await a2a({ jsonrpc: '2.0', id: 'p', method }), -32602, 'p');
        expectRpcError({ method, params: 'an array' }, await a2a({ jsonrpc: '2.0', id: 'p', method, params: [1] }), -32602, 'p');
      }
    });

    it('a notification (no id) gets no answer and runs nothing: 204 with no body, whatever it asks', async () => {
      const before = await gw.app.store.headPosition();
      for (const n of [
        { jsonrpc: '2.0', method: 'message/send', params: { message: message([dataPart({ skill: 'sync_accounts', input: valid.sync_accounts })]) } },
        { jsonrpc: '2.0', method: 'no/such/method' },
        { jsonrpc: '2.0', method: 'message/send', params: { message: message('x') } },
        { jsonrpc: '2.0', method: 'tasks/get' },
        [{ jsonrpc: '2.0', method: 'tasks/get', params: { id: 'x' } }],
      ]) {
        const a = await a2a(n);
        expectNoFault(n, a);
        expect({ n, status: a.status, text: a.text }).toEqual({ n, status: 204, text: '' });
      }
      expect(await gw.app.store.headPosition()).toBe(before);
    });

    it('a batch is not served: an empty one is one -32600, and each request of one gets its own', async () => {
      expectRpcError('[]', await a2a([]), -32600, null);
      const batch = await a2a([{ jsonrpc: '2.0', id: 'a', method: 'tasks/get', params: { id: 'x' } }, 1, { jsonrpc: '2.0', method: 'tasks/get', params: { id: 'x' } }]);
      expectNoFault('batch', batch);
      expect(batch.json.map((m: any) => [m.id, m.error.code])).toEqual([
        ['a', -32600],
        [null, -32600],
      ]);
    });

    it('message/send and message/stream whose parts are not an array of Parts, or whose DataPart is not { skill, input }, are -32602 saying what is wrong (not -32603 in the engine\'s words)', async () => {
      for (const method of ['message/send', 'message/stream']) {
        for (const [label, msg] of NON_OBJECTS) {
          const a = await a2a({ jsonrpc: '2.0', id: 'm', method, params: { message: msg } });
          expectRpcError({ method, message: label }, a, -32602, 'm');
          expect(a.json.error.message).toMatch(/^params\.message must be a Message object, not /);
        }
        for (const [label, parts] of TYPES.filter(([, v]) => !Array.isArray(v) && v !== null)) {
          const a = await a2a(send(parts, 'p', method));
          expectRpcError({ method, parts: label }, a, -32602, 'p');
          expect(a.json.error.message).toMatch(/^message\.parts must be an array of Parts, not /);
        }
        // Each JSON type as a part: only an object can be one, and only with a kind A2A has.
        for (const [label, part] of TYPES) {
          const a = await a2a(send([part, dataPart({ skill: 'get_products', input: {} })], 'q', method));
          expectRpcError({ method, part: label }, a, -32602, 'q');
          expect(a.json.error.message).toMatch(/^message\.parts\[0\](\.kind)? must be /);
        }
        for (const [label, text] of TYPES.filter(([, v]) => typeof v !== 'string')) expectRpcError({ text: label }, await a2a(send([{ kind: 'text', text }], 't', method)), -32602, 't');
        for (const [label, file] of NON_OBJECTS) expectRpcError({ file: label }, await a2a(send([{ kind: 'file', file }], 'f', method)), -32602, 'f');
        // Each JSON type as the DataPart's data, its skill and its input.
        for (const [label, data] of NON_OBJECTS) {
          const a = await a2a(send([dataPart(data)], 'd', method));
          expectRpcError({ data: label }, a, -32602, 'd');
          expect(a.json.error.message).toMatch(/^the DataPart data must be an object \{ skill, input \}, not /);
        }
        for (const [label, skill] of TYPES.filter(([, v]) => typeof v !== 'string' || v === '')) expectRpcError({ skill: label }, await a2a(ask(skill, {}, 's')), -32602, 's');
        for (const [label, input] of NON_OBJECTS.filter(([, v]) => v !== null)) expectRpcError({ input: label }, await a2a(ask('get_products', input, 'i')), -32602, 'i');
        for (const [label, configuration] of NON_OBJECTS.filter(([, v]) => v !== null)) {
          expectRpcError({ configuration: label }, await a2a({ jsonrpc: '2.0', id: 'c', method, params: { message: message([dataPart({ skill: 'get_products', input: {} })]), configuration } }), -32602, 'c');
        }
      }
      for (const [label, id] of TYPES.filter(([, v]) => typeof v !== 'string' || v === '')) expectRpcError({ taskId: label }, await a2a({ jsonrpc: '2.0', id: 'g', method: 'tasks/get', params: { id } }), -32602, 'g');
    });

    it('tasks/get that AdCP refuses says why, with AdCP\'s error (was -32603): a __proto__ key -32602, a role that may not read tasks -32000', async () => {
      const poisoned = await a2a({ raw: '{"jsonrpc":"2.0","id":"k","method":"tasks/get","params":{"id":"t","historyLength":{"__proto__":null}}}' });
      expectRpcError('__proto__', poisoned, -32602, 'k');
      expect(poisoned.json.error.data.adcp_error).toMatchObject({ code: 'INVALID_REQUEST' });
      const seller = (await issueApiKey(gw.app.store, { org: 'fuzz-rpc-seller', role: 'seller' }, { now: new Date().toISOString(), principal: 'test' })).key;
      await eventually(async () => (await a2a({ jsonrpc: '2.0', id: 0, method: 'tasks/get', params: { id: 't' } }, seller)).status !== 401, 10_000, 'the seller key');
      const asSeller = await a2a({ jsonrpc: '2.0', id: 's', method: 'tasks/get', params: { id: 't' } }, seller);
      expectRpcError('seller', asSeller, -32000, 's');
      expect(asSeller.json.error.data.adcp_error).toMatchObject({ code: 'PERMISSION_DENIED' });
    });

    it('the corpus as a task\'s input (damaged valid requests, arbitrary JSON): a completed Task carrying the answer or the AdCP error, or -32602', async () => {
      for (const tool of REPRESENTATIVE) {
        await fc.assert(
          fc.asyncProperty(corpusFor(valid[tool]!, tool), async (input) => {
            const a = await a2a(ask(tool, input, 'c'));
            expectNoFault({ tool, input }, a);
            if (a.json.error) expect({ tool, input, code: a.json.error.code }).toEqual({ tool, input, code: hasNul(input) ? -32600 : -32602 });
            else expect({ id: a.json.id, kind: a.json.result.kind, state: a.json.result.status.state }).toEqual({ id: 'c', kind: 'task', state: 'completed' });
          }),
          { numRuns: RUNS },
        );
      }
      // Arbitrary JSON as the parts, a part, the DataPart's data, the skill, the params and the message.
      await fc.assert(
        fc.asyncProperty(anyJson, anyJson, async (x, y) => {
          for (const body of [send(x), send([x]), send([dataPart(x)]), ask(x, y), ask('get_products', x), { jsonrpc: '2.0', id: 3, method: 'message/send', params: x }, { jsonrpc: '2.0', id: 4, method: 'tasks/get', params: { id: x, historyLength: y } }, x]) {
            const a = await a2a(body);
            expectNoFault(body, a);
            if (a.json?.error) expect({ body, code: oneOf(a.json.error.code, RPC_CODES) }).toEqual({ body, code: RPC_CODES });
          }
        }),
        { numRuns: RUNS },
      );
    }, 300_000);

    it('hostile bodies: deep, not JSON, not an object, proto keys, huge, oversized', async () => {
      for (const [label, raw] of hostileBodies(valid.create_media_buy!)) {
        for (const body of [raw, JSON.stringify(ask('create_media_buy', 0)).replace('"input":0', `"input":${raw || 'null'}`)]) {
          const a = await a2a({ raw: body });
          expectNoFault(label, a);
        }
      }
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    }, 120_000);
  });
});

describe('MCP and A2A: a refusal made before JSON-RPC names the request it refuses, with AdCP\'s error and reason code', () => {
  it('credentials (401, -32028 AUTH_REQUIRED), failed authentications and request rates (-32029 RATE_LIMITED, answered 200 so clients read it); @adcp/sdk\'s client reads the reason code', async () => {
    // Loopback is a trusted proxy, so each part below comes from an address of its own.
    const gw = await startTestGateway({ REQUESTS_PER_MINUTE: 'buyer=12,anonymous=1000', AUTH_FAILURES_PER_MINUTE: '3', TRUST_PROXY: '127.0.0.1', PUBLIC_URL: 'https://agent.example' });
    await freshBudgetWindow(); // the budgets below are counted to their end
    try {
      const keyOf = async (org: string) => (await issueApiKey(gw.app.store, { org, role: 'buyer' }, { now: new Date().toISOString(), principal: 'test' })).key;
      const [buyer, sdkBuyer] = [await keyOf('rate'), await keyOf('rate-sdk')];
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 15_000, 'readyz');
      const endpoints = [`${gw.url}/mcp`, `${gw.url}/a2a`];
      const request = (id: Id) => ({ jsonrpc: '2.0', id, method: 'tasks/get', params: { id: 'x' } });

      // No credentials, from another address each (the failed-authentication budget is per address).
      for (const url of endpoints) {
        const a = await post(url, request(`none-${url}`), null, { 'x-forwarded-for': '10.1.0.1' });
        expectRpcError('no credentials', a, -32028, `none-${url}`, 401);
        expect(a.json.error.data.adcp_error).toMatchObject({ code: 'AUTH_REQUIRED', recovery: 'correctable' });
      }

      // Bad keys from one address until it is throttled: every refusal names its request.
      for (let i = 0; i < 6; i++) {
        const a = await post(endpoints[i % 2]!, request(`bad-${i}`), 'sk_not-a-key', { 'x-forwarded-for': '10.2.0.1' });
        expectNoFault({ bad: i }, a);
        expect({ i, id: a.json.id, code: oneOf(a.json.error.code, [-32028, -32029]) }).toEqual({ i, id: `bad-${i}`, code: [-32028, -32029] });
        if (a.json.error.code === -32029) {
          expect({ status: a.status, adcp: a.json.error.data.adcp_error }).toEqual({ status: 200, adcp: expect.objectContaining({ code: 'RATE_LIMITED', recovery: 'transient', retry_after: expect.any(Number) }) });
          expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0);
        }
      }

      // A key's request rate: spent, then every refusal is -32029 naming its request.
      let refused: Answer | undefined;
      for (let i = 0; i < 20 && !refused; i++) {
        const a = await post(endpoints[i % 2]!, request(i), buyer);
        if (a.json?.error?.code === -32029) refused = a;
      }
      expect(refused).toBeDefined();
      for (const url of endpoints) {
        for (const id of ['after-limit', 42]) {
          const a = await post(url, request(id), buyer);
          expectRpcError({ url, id }, a, -32029, id);
          expect(a.json.error.data.adcp_error).toMatchObject({ code: 'RATE_LIMITED', recovery: 'transient', retry_after: Number(a.headers.get('retry-after')) });
        }
        // A body too large to read for its id keeps the HTTP status: nothing names a request.
        const big = await post(url, { ...request('big'), pad: 'x'.repeat(70 * 1024) }, buyer);
        expectRpcError({ url, big: true }, big, -32029, null, 429);
        // A notification is refused without a request to name either.
        const note = await post(url, { jsonrpc: '2.0', method: 'tasks/get', params: { id: 'x' } }, buyer);
        expect({ status: note.status, id: note.json?.id, code: note.json?.error?.code }).toEqual({ status: 429, id: null, code: -32029 });
      }

      // @adcp/sdk's buyer client over MCP: once the key's budget is spent, each call's result
      // carries the reason code (the SDK's fuzzer fails a tool whose error envelope has none).
      // 30 calls against a budget of 12 a fixed minute: even when a minute boundary falls among
      // them and resets the count, 18 or more land in one window.
      const results = await sdkClientSteps({ agentUrl: `${gw.url}/mcp`, token: sdkBuyer, steps: Array.from({ length: 30 }, () => ({ method: 'executeTask', params: { task: 'get_products', params: { buying_mode: 'brief', brief: 'video' } } })) });
      expect(results[0]!.success).toBe(true);
      const failed = results.filter((r) => !r.success);
      expect(failed.length).toBeGreaterThan(0);
      for (const r of failed) expect(r.adcpError).toMatchObject({ code: 'RATE_LIMITED', recovery: 'transient' });
    } finally {
      await gw.stop();
    }
  }, 120_000);
});
