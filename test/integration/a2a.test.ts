import fc from 'fast-check';
import { A2AClient, TaskNotFoundError } from '@a2a-js/sdk/client';
import type { Task } from '@a2a-js/sdk';
import { issueApiKey } from '../../src/application/api-keys';
import { validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { graphql, startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';

type Json = Record<string, any>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
let messageSeq = 0;

/** A message to the agent running one AdCP task, as @adcp/sdk's A2A client words it. */
const ask = (skill: string, parameters: Json, extra: Json = {}) => ({
  message: { kind: 'message' as const, role: 'user' as const, messageId: `m-${++messageSeq}`, parts: [{ kind: 'data' as const, data: { skill, parameters } }], ...extra },
});

/** The AdCP answer a Task carries: its first artifact's last DataPart. */
const answerOf = (task: Task): Json => (task.artifacts![0]!.parts.filter((p) => p.kind === 'data').at(-1) as { data: Json }).data;

/**
 * The sales agent over A2A, driven by @a2a-js/sdk's own client (the one @adcp/sdk uses) and by raw
 * JSON-RPC: the agent card, AdCP answers as Task artifacts, the AdCP task behind a pending answer
 * followed with tasks/get as the seller approves, tasks kept per buyer, and every malformed request
 * answered with a JSON-RPC error, never a 5xx.
 */
describe('A2A binding', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let buyer: string;
  let other: string;
  let seller: string;
  const clientFor = (key: string) =>
    A2AClient.fromCardUrl(`${gw.url}/.well-known/agent-card.json`, { fetchImpl: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers as Record<string, string>), authorization: `Bearer ${key}` } }) });
  const rpc = async (body: unknown, key: string | null = buyer, path = '/a2a') => {
    const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
  };

  beforeAll(async () => {
    gw = await startTestGateway();
    const ctx = { now: new Date().toISOString() };
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
    other = (await issueApiKey(gw.app.store, { org: 'rival', role: 'buyer' }, ctx)).key;
    seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, ctx)).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('serves the agent card at both well-known names: a skill per AdCP task, JSON-RPC at /a2a, bearer credentials', async () => {
    for (const path of ['/.well-known/agent-card.json', '/.well-known/agent.json', '/a2a/.well-known/agent-card.json']) {
      const res = await fetch(`${gw.url}${path}`);
      expect(res.status).toBe(200);
      const card = (await res.json()) as Json;
      expect(card).toMatchObject({ url: `${gw.url}/a2a`, protocolVersion: '0.3.0', preferredTransport: 'JSONRPC', securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } });
      const skills = (card.skills as { id: string }[]).map((s) => s.id);
      expect(skills).toEqual(expect.arrayContaining(['get_adcp_capabilities', 'get_products', 'create_media_buy', 'update_media_buy', 'sync_creatives', 'get_media_buy_delivery', 'tasks/get']));
    }
  });

  it('answers a synchronous task as a completed Task whose artifact is the AdCP 3.0 answer, kept for tasks/get by its buyer only', async () => {
    const client = await clientFor(buyer);
    const sent = (await client.sendMessage(ask('get_products', { buying_mode: 'brief', brief: 'sports video', context: { correlation_id: 'c-1' } }))) as { result: Task };
    expect(sent.result).toMatchObject({ kind: 'task', status: { state: 'completed' }, contextId: expect.any(String), artifacts: [{ name: 'result' }] });
    const products = answerOf(sent.result);
    expect(validateAdcp3Response('get_products', products)).toMatchObject({ valid: true });
    expect(products).toMatchObject({ context: { correlation_id: 'c-1' } });
    expect(products.products.length).toBeGreaterThan(0);

    const again = (await client.getTask({ id: sent.result.id })) as { result: Task };
    expect(again.result).toMatchObject({ id: sent.result.id, status: { state: 'completed' } });
    await expect((await clientFor(other)).getTask({ id: sent.result.id })).rejects.toBeInstanceOf(TaskNotFoundError);
  });

  it('carries an AdCP error in a completed Task\'s "error" artifact, in the shape MCP answers it', async () => {
    const client = await clientFor(buyer);
    const sent = (await client.sendMessage(ask('update_media_buy', { media_buy_id: 'mb_nope', paused: true, idempotency_key: 'a2a-err-000000001', context: { correlation_id: 'c-2' } }))) as { result: Task };
    expect(sent.result).toMatchObject({ status: { state: 'completed' }, artifacts: [{ name: 'error' }] });
    expect(answerOf(sent.result)).toMatchObject({ adcp_error: { code: 'MEDIA_BUY_NOT_FOUND' }, errors: [{ code: 'MEDIA_BUY_NOT_FOUND' }], context: { correlation_id: 'c-2' } });
  });

  it('a buy awaiting the seller: the call completes with the submitted arm, and tasks/get follows the AdCP task from submitted to completed with the buy', async () => {
    const client = await clientFor(buyer);
    const contextId = 'ctx-guaranteed-buy';
    const create = {
      brand: { domain: 'acme-outdoor.com' },
      start_time: 'asap',
      end_time: future(20),
      packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }],
      idempotency_key: `a2a-create-${Date.now()}`,
    };
    const sent = (await client.sendMessage(ask('create_media_buy', create, { contextId }))) as { result: Task };
    expect(sent.result).toMatchObject({ status: { state: 'completed' }, contextId, artifacts: [{ name: 'submitted', metadata: { adcp_task_id: expect.any(String) } }] });
    const submitted = answerOf(sent.result);
    expect(submitted).toMatchObject({ status: 'submitted', task_id: sent.result.artifacts![0]!.metadata!.adcp_task_id });
    expect(validateAdcp3Response('create_media_buy', submitted)).toMatchObject({ valid: true });
    const taskId = submitted.task_id as string;

    const pending = (await client.getTask({ id: taskId })) as { result: Task };
    expect(pending.result).toMatchObject({ id: taskId, contextId, status: { state: 'submitted', message: { role: 'agent' } } });
    expect(pending.result.artifacts).toBeUndefined();

    const approved = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t, note: "IO signed") }', { t: taskId }, seller);
    expect(approved.body.errors).toBeUndefined();
    const done = (await client.getTask({ id: taskId })) as { result: Task };
    expect(done.result).toMatchObject({ id: taskId, contextId, status: { state: 'completed' }, artifacts: [{ name: 'result' }] });
    const buy = answerOf(done.result);
    expect(buy).toMatchObject({ media_buy_id: expect.any(String), packages: [expect.objectContaining({ package_id: expect.any(String) })] });
    expect(validateAdcp3Response('create_media_buy', buy)).toMatchObject({ valid: true });

    // Another buyer cannot follow it; tasks cannot be canceled by message.
    await expect((await clientFor(other)).getTask({ id: taskId })).rejects.toBeInstanceOf(TaskNotFoundError);
    expect((await rpc({ jsonrpc: '2.0', id: 9, method: 'tasks/cancel', params: { id: taskId } })).body.error).toMatchObject({ code: -32002 });
  });

  it("a buy canceled over A2A: the answer leads with a TextPart, so the buy's status is not read as the call's", async () => {
    const client = await clientFor(buyer);
    const created = answerOf(
      ((await client.sendMessage(
        ask('create_media_buy', {
          brand: { domain: 'acme-outdoor.com' },
          start_time: 'asap',
          end_time: future(20),
          packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 500 }],
          idempotency_key: `a2a-cancel-${Date.now()}`,
        }),
      )) as { result: Task }).result,
    );
    const canceled = ((await client.sendMessage(ask('update_media_buy', { media_buy_id: created.media_buy_id, canceled: true, idempotency_key: `a2a-cancel-u-${Date.now()}` }))) as { result: Task }).result;
    const parts = canceled.artifacts![0]!.parts;
    expect(parts.map((p) => p.kind)).toEqual(['text', 'data']);
    expect(answerOf(canceled)).toMatchObject({ media_buy_id: created.media_buy_id, status: 'canceled' });
  });

  it('message/stream follows a pending buy as the seller approves: the Task submitted, then working, then the buy as an artifact and completed (final)', async () => {
    const client = await clientFor(buyer);
    const stream = client.sendMessageStream(
      ask(
        'create_media_buy',
        {
          brand: { domain: 'acme-outdoor.com' },
          start_time: 'asap',
          end_time: future(20),
          packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }],
          idempotency_key: `a2a-stream-${Date.now()}`,
        },
        { contextId: 'ctx-stream' },
      ),
    );
    const seen: Json[] = [];
    let approval: Promise<unknown> | undefined;
    for await (const event of stream) {
      seen.push(event as Json);
      // The seller signs the IO once the buyer is watching.
      if (seen.length === 1) approval = graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t, note: "IO signed") }', { t: (event as Task).id }, seller);
    }
    await approval;
    const taskId = (seen[0] as Task).id;
    expect(seen.map((e) => `${e.kind}:${e.status?.state ?? e.artifact?.name}`)).toEqual(['task:submitted', 'status-update:working', 'artifact-update:result', 'status-update:completed']);
    expect(seen[0]).toMatchObject({ contextId: 'ctx-stream', artifacts: [{ name: 'submitted', metadata: { adcp_task_id: taskId } }] });
    expect(seen.at(-1)).toMatchObject({ taskId, contextId: 'ctx-stream', final: true });
    const buy = (seen[2]!.artifact.parts as { kind: string; data: Json }[]).find((p) => p.kind === 'data')!.data;
    expect(validateAdcp3Response('create_media_buy', buy)).toMatchObject({ valid: true });
    expect(buy.media_buy_id).toEqual(expect.any(String));

    // Resubscribing to a finished task gives it as it ended; a synchronous call streams as one Task.
    const again: Json[] = [];
    for await (const event of client.resubscribeTask({ id: taskId })) again.push(event as Json);
    expect(again).toEqual([expect.objectContaining({ kind: 'task', id: taskId, status: expect.objectContaining({ state: 'completed' }) })]);
    const once: Json[] = [];
    for await (const event of client.sendMessageStream(ask('get_products', { buying_mode: 'brief', brief: 'news' }))) once.push(event as Json);
    expect(once).toEqual([expect.objectContaining({ kind: 'task', status: expect.objectContaining({ state: 'completed' }) })]);
  });

  it('holds at most 20 open streams per key, and a stream whose caller goes away is released', async () => {
    const client = await clientFor(other);
    const pending = answerOf(
      ((await client.sendMessage(
        ask('create_media_buy', { brand: { domain: 'rival.example' }, start_time: 'asap', end_time: future(20), packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }], idempotency_key: `a2a-cap-${Date.now()}` }),
      )) as { result: Task }).result,
    );
    const open = async () => {
      const abort = new AbortController();
      const res = await fetch(`${gw.url}/a2a`, { method: 'POST', signal: abort.signal, headers: { 'content-type': 'application/json', authorization: `Bearer ${other}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: pending.task_id } }) });
      return { abort, res };
    };
    const streams = [];
    for (let i = 0; i < 20; i++) streams.push(await open());
    expect(streams.every((s) => s.res.headers.get('content-type') === 'text/event-stream')).toBe(true);
    const refused = await open();
    expect(refused.res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await refused.res.json()).toMatchObject({ error: { code: -32000, message: expect.stringMatching(/20 open streams/) } });
    for (const s of streams) s.abort.abort();
    const again = await eventually(async () => {
      const s = await open();
      if (s.res.headers.get('content-type') === 'text/event-stream') return s;
      await s.res.text();
      return undefined;
    }, 10_000, 'a stream slot freed by the callers that went away');
    again!.abort.abort();
  });

  it('answers every malformed request with a JSON-RPC error, never a 5xx', async () => {
    const cases: [unknown, number][] = [
      ['{"jsonrpc":"2.0","id":1,"method":"message/send"', -32700],
      [{ jsonrpc: '1.0', id: 1, method: 'tasks/get', params: { id: 'x' } }, -32600],
      [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_products' } }, -32601],
      // Params that are not structured make an invalid Request object (JSON-RPC 2.0 §4.2); an array is -32602 (A2A takes params by name).
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: 'x' }, -32600],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: [] }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', parts: [] } } }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'text', text: 'buy me ads' }] } } }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'data', data: { skill: 7 } }] } } }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: 'm', parts: [{ kind: 'data', data: { skill: 'get_products', input: [1] } }] } } }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'message/stream', params: { message: { kind: 'message', role: 'user', messageId: 'm', parts: [] } } }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: { id: 'task_unknown' } }, -32001],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: 'x' }, -32600],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/resubscribe', params: [1] }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: {} }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'task_unknown' } }, -32001],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/pushNotificationConfig/set', params: { taskId: 'x', pushNotificationConfig: { url: 'https://buyer.example/hook' } } }, -32004],
      [{ jsonrpc: '2.0', id: 1, method: 'tasks/pushNotificationConfig/list', params: { id: 'task_unknown' } }, -32001],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { ...ask('get_products', {}), configuration: { pushNotificationConfig: { url: 'http://10.0.0.1/hook' } } } }, -32602],
      [{ jsonrpc: '2.0', id: 1, method: 'message/send', params: { ...ask('get_products', {}), configuration: { pushNotificationConfig: { url: 'https://buyer.example/hook', authentication: { schemes: ['HMAC-SHA256'], credentials: 'short' } } } } }, -32602],
    ];
    for (const [body, code] of cases) {
      const res = await rpc(body);
      expect({ body, status: res.status < 500, code: res.body.error?.code }).toEqual({ body, status: true, code });
      expect(res.body.jsonrpc).toBe('2.0');
    }
    // A2A's body is one request: a batch is not served, each of its requests answered -32600 (JSON-RPC 2.0 §6).
    const batch = await rpc([{ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }]);
    expect({ status: batch.status, body: batch.body }).toEqual({ status: 200, body: [{ jsonrpc: '2.0', id: 1, error: { code: -32600, message: expect.stringMatching(/^Invalid Request: /) } }] });
    // An unknown skill is an AdCP error in the answer, as over MCP.
    const unknown = await rpc({ jsonrpc: '2.0', id: 1, method: 'message/send', params: ask('buy_everything', {}) });
    expect(answerOf(unknown.body.result as Task)).toMatchObject({ adcp_error: { code: 'INVALID_REQUEST' } });
  });

  it('property: whatever JSON-RPC arrives (methods, params, parts, skills, inputs at random), the answer is JSON-RPC 2.0 with a result or an error, never a 5xx', async () => {
    const runs = Number(process.env.FUZZ_RUNS ?? 60);
    const skills = ['get_products', 'create_media_buy', 'update_media_buy', 'sync_creatives', 'get_media_buys', 'tasks/get', 'call_adcp_agent', 'comply_test_controller'];
    const part = fc.oneof(
      fc.record({ kind: fc.constant('data'), data: fc.oneof(fc.anything(), fc.record({ skill: fc.oneof(fc.constantFrom(...skills), fc.string()), input: fc.oneof(fc.anything(), fc.dictionary(fc.string(), fc.anything())), parameters: fc.anything() }, { requiredKeys: [] })) }, { requiredKeys: [] }),
      fc.record({ kind: fc.constant('text'), text: fc.anything() }),
      fc.anything(),
    );
    const message = fc.record({ kind: fc.constant('message'), role: fc.constantFrom('user', 'agent'), messageId: fc.oneof(fc.string(), fc.anything()), contextId: fc.anything(), taskId: fc.anything(), parts: fc.oneof(fc.array(part, { maxLength: 3 }), fc.anything()) }, { requiredKeys: ['kind', 'parts'] });
    const params = fc.oneof(fc.record({ message, configuration: fc.anything() }, { requiredKeys: ['message'] }), fc.record({ id: fc.oneof(fc.string(), fc.anything()), historyLength: fc.anything() }, { requiredKeys: [] }), fc.anything());
    const method = fc.oneof(fc.constantFrom('message/send', 'message/stream', 'tasks/get', 'tasks/cancel', 'tasks/resubscribe', 'tasks/pushNotificationConfig/get', 'tasks/pushNotificationConfig/list', 'agent/getAuthenticatedExtendedCard'), fc.string());
    await fc.assert(
      fc.asyncProperty(method, params, fc.oneof(fc.integer(), fc.string(), fc.constant(null)), async (m, p, id) => {
        const res = await fetch(`${gw.url}/a2a`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify({ jsonrpc: '2.0', id, method: m, params: p }) });
        expect(res.status).toBeLessThan(500);
        const text = await res.text();
        // A stream's first event is enough (a pending task would stream for minutes).
        const first = res.headers.get('content-type') === 'text/event-stream' ? /^data: (.*)$/m.exec(text)![1]! : text;
        const body = JSON.parse(first) as Json;
        if (res.status >= 400) return; // refused before JSON-RPC (a body the parser refuses), in JSON-RPC's shape
        expect(body.jsonrpc).toBe('2.0');
        expect('result' in body !== 'error' in body).toBe(true);
        if (body.error) expect(Number.isInteger(body.error.code)).toBe(true);
        if (body.result && m === 'message/send') expect(body.result).toMatchObject({ kind: 'task', status: { state: 'completed' }, artifacts: [{ parts: expect.arrayContaining([expect.objectContaining({ kind: 'data' })]) }] });
      }),
      { numRuns: runs },
    );
  }, 120_000);

  it('refuses a call without credentials or with a bad key (401 naming where to get a token), at the endpoint and at the base URL', async () => {
    for (const path of ['/a2a', '/']) {
      const none = await rpc({ jsonrpc: '2.0', id: 1, method: 'message/send', params: ask('get_products', {}) }, null, path);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toContain(`resource_metadata="${gw.url}/.well-known/oauth-protected-resource${path === '/' ? '' : path}"`);
      expect(none.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32028, data: { adcp_error: { code: 'AUTH_REQUIRED' } } } });
      const bad = await rpc({ jsonrpc: '2.0', id: 1, method: 'message/send', params: ask('get_products', {}) }, 'sk_nope_nope', path);
      expect(bad.status).toBe(401);
    }
    const metadata = (await (await fetch(`${gw.url}/.well-known/oauth-protected-resource`)).json()) as Json;
    expect(metadata.resource).toBe(gw.url);
  });
});
