import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { taskStream } from '../../src/domain/task/task';
import { validateAdcp3, validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { adcp31 } from '../support/adcp31';
import { graphql, startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';
import { createTestDatabase, describeWith, eventually, PG_ADMIN_URL } from '../support/infra';
import { startReceiver } from '../support/receiver';
import { sdkVerifyWebhooks } from '../support/sdk-oracle';

type Json = Record<string, any>;

const future = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();
let messageSeq = 0;

/**
 * AdCP 3.1's task surface (issue 36, part 2): a 3.1 buyer (`adcp_version: "3.1"`) creates a buy
 * that waits for the seller, with a push_notification_config; polls it with get_task_status,
 * finds it with list_tasks, and hears it approved at a real receiver. Every answer and webhook
 * body is held to the 3.1.19 schemas; the task remembers its release, so its later answers (A2A
 * tasks/get included) and its webhooks are 3.1's. A 3.0 buyer doing the same gets 3.0.6-valid
 * answers and today's 3.0 webhooks (no notification_id, no token), over MCP and A2A alike.
 */
function suite(engine: string, setup: () => Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }>): void {
  describe(`AdCP 3.1 tasks and webhooks, MCP and A2A (${engine})`, () => {
    let cleanup: (() => Promise<void>) | undefined;
    let gw: Awaited<ReturnType<typeof startTestGateway>>;
    let buyer: string;
    let rival: string;
    let seller: string;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;

    /** One tools/call over a binding: its AdCP answer and whether it was an error. */
    type Call = (name: string, args: Json, key?: string) => Promise<{ isError: boolean; body: Json }>;

    const mcp: Call = (name, args, key = buyer) => mcpCall(gw.url, key, name, args, { validate: false });

    const a2aRpc = async (method: string, params: Json, key = buyer): Promise<Json> => {
      const res = await fetch(`${gw.url}/a2a`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++messageSeq, method, params }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as Json;
    };

    /** message/send with one DataPart { skill, parameters }, as @adcp/sdk's A2A client sends it; the answer is the artifact's last DataPart. */
    const a2a: Call = async (name, args, key = buyer) => {
      const { result } = await a2aRpc('message/send', { message: { kind: 'message', role: 'user', messageId: `t31-${++messageSeq}`, parts: [{ kind: 'data', data: { skill: name, parameters: args } }] } }, key);
      expect(result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
      const artifact = result.artifacts[0];
      return { isError: artifact.name === 'error', body: artifact.parts.filter((p: Json) => p.kind === 'data').at(-1).data as Json };
    };

    /** The release a call is pinned to (3.1), or none (3.0): its answers are held to that release's schemas. */
    interface Release {
      name: '3.1' | '3.0';
      pin: Json;
      /** Asserts a successful answer of `tool` valid in this release. */
      valid(tool: string, body: Json): void;
      /** Asserts a task webhook body valid in this release. */
      validWebhook(body: Json): void;
    }

    const valid = (v: { valid: boolean; errors: string[] }, what: string) => expect({ what, valid: v.valid, errors: v.errors }).toEqual({ what, valid: true, errors: [] });
    /**
     * The media-buy tasks' own 3.1 answers are issue 36's part 1, not this one's: until they land, a
     * 3.1 create answer carries 3.0's buy status at `status` (3.1 puts the task status there and the
     * buy's at `media_buy_status`). That difference, and only it, may keep one from 3.1.19.
     */
    const valid31 = (tool: string, body: Json) => {
      const v = adcp31().validateResponse(tool, body);
      if (v.valid || tool !== 'create_media_buy') return valid(v, `3.1 ${tool}`);
      expect(v.errors).toEqual([expect.stringMatching(/^\/status must be equal to one of the allowed values/)]);
      valid(adcp31().validateResponse(tool, { ...body, status: 'completed', media_buy_status: body.status }), `3.1 ${tool} (its buy status where 3.1 puts it)`);
    };
    const V31: Release = {
      name: '3.1',
      pin: { adcp_version: '3.1', adcp_major_version: 3 },
      valid: valid31,
      validWebhook: (body) => valid(adcp31().validate('core/mcp-webhook-payload.json', body), '3.1 webhook'),
    };
    /** 3.0.6 names the task reads tasks_get / tasks_list (its manifest has no task tools). */
    const SCHEMA30: Readonly<Record<string, string>> = { get_task_status: 'core/tasks-get-response.json', list_tasks: 'core/tasks-list-response.json', tasks_get: 'core/tasks-get-response.json', tasks_list: 'core/tasks-list-response.json' };
    const V30: Release = {
      name: '3.0',
      pin: {},
      valid: (tool, body) => valid(SCHEMA30[tool] ? validateAdcp3(SCHEMA30[tool]!, body) : validateAdcp3Response(tool, body), `3.0 ${tool}`),
      validWebhook: (body) => valid(validateAdcp3('core/mcp-webhook-payload.json', body), '3.0 webhook'),
    };

    beforeAll(async () => {
      receiver = await startReceiver();
      const e = await setup();
      cleanup = e.cleanup;
      gw = await startTestGateway({ ...e.env, ALLOW_PRIVATE_WEBHOOK_URLS: '1' });
      const ctx = { now: new Date().toISOString() };
      buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, ctx)).key;
      rival = (await issueApiKey(gw.app.store, { org: 'rival', role: 'buyer' }, ctx)).key;
      seller = (await issueApiKey(gw.app.store, { org: 'publisher', role: 'seller' }, ctx)).key;
      await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    });
    afterAll(async () => {
      await gw?.stop();
      await cleanup?.();
      await receiver?.close();
    });

    describe.each<[string, string, () => Call, Release]>([
      ['MCP', '3.1', () => mcp, V31],
      ['A2A', '3.1', () => a2a, V31],
      ['MCP', '3.0', () => mcp, V30],
      ['A2A', '3.0', () => a2a, V30],
    ])('over %s, AdCP %s', (binding, _release, callOf, release) => {
      it('a buy awaiting the seller: submitted, polled with get_task_status, listed with list_tasks, approved; every answer and webhook in the buyer\'s release', async () => {
        const call = callOf();
        const tag = `${binding}-${release.name}`.replace('.', '');
        const operationId = `op-${tag}-${randomUUID()}`;
        const token = `tok-${randomUUID()}`;
        const context = { trace: `trace-${tag}` };
        // The URL carries a different "operation": the payload's operation_id must be the registration's.
        const url = `${receiver.origin}/hooks/create_media_buy/url-op-${tag}`;
        const created = await call('create_media_buy', {
          ...release.pin,
          brand: { domain: 'acme-outdoor.com' },
          start_time: 'asap',
          end_time: future(20),
          packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 }],
          push_notification_config: { url, operation_id: operationId, token },
          idempotency_key: `t31-create-${randomUUID()}`,
          context,
        });
        expect(created.isError).toBe(false);
        expect(created.body).toMatchObject({ status: 'submitted', task_id: expect.any(String), context });
        release.valid('create_media_buy', created.body);
        const taskId = created.body.task_id as string;

        // The task remembers the release its call was answered in (absent: 3.0, as before 3.1).
        const [submitted] = await gw.app.store.readStream(taskStream(taskId), { limit: 1 });
        expect((submitted!.data as Json).adcp_version).toBe(release.name === '3.1' ? '3.1' : undefined);

        const polled = await call('get_task_status', { ...release.pin, task_id: taskId, context });
        expect(polled.isError).toBe(false);
        expect(polled.body).toMatchObject({ task_id: taskId, task_type: 'create_media_buy', protocol: 'media-buy', status: 'submitted', has_webhook: true, context });
        expect(polled.body).not.toHaveProperty('history'); // only with include_history
        expect(polled.body).not.toHaveProperty('result');
        release.valid('get_task_status', polled.body);
        if (release.name === '3.1') expect(polled.body.adcp_version).toBe('3.1');
        else expect(polled.body).not.toHaveProperty('adcp_version');

        const listed = await call('list_tasks', { ...release.pin, filters: { task_ids: [taskId], has_webhook: true, statuses: ['submitted'], protocol: 'media-buy' }, sort: { field: 'updated_at', direction: 'asc' } });
        expect(listed.isError).toBe(false);
        expect(listed.body).toMatchObject({
          query_summary: { total_matching: 1, returned: 1, filters_applied: ['protocol', 'statuses', 'task_ids', 'has_webhook'], sort_applied: { field: 'updated_at', direction: 'asc' } },
          tasks: [{ task_id: taskId, task_type: 'create_media_buy', domain: 'media-buy', status: 'submitted', has_webhook: true }],
          pagination: { has_more: false },
        });
        release.valid('list_tasks', listed.body);
        // Another buyer neither reads nor lists it: REFERENCE_NOT_FOUND, as 3.1 names an unknown task.
        const foreign = await call('get_task_status', { ...release.pin, task_id: taskId }, rival);
        expect(foreign).toMatchObject({ isError: true, body: { adcp_error: { code: 'REFERENCE_NOT_FOUND', field: 'task_id' } } });
        expect((await call('list_tasks', { ...release.pin, filters: { task_ids: [taskId] } }, rival)).body.tasks).toEqual([]);

        const approved = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t, note: "IO signed") }', { t: taskId }, seller);
        expect(approved.body.errors).toBeUndefined();

        const done = await call('get_task_status', { ...release.pin, task_id: taskId, include_result: true, include_history: true });
        expect(done.body).toMatchObject({ task_id: taskId, status: 'completed', completed_at: expect.any(String), result: { media_buy_id: expect.any(String) }, history: expect.arrayContaining([expect.objectContaining({ type: 'response', data: { status: 'completed', message: expect.any(String) } })]) });
        release.valid('get_task_status', done.body);
        // The result is the create's own answer in the task's release.
        release.valid('create_media_buy', done.body.result);
        const lean = await call('get_task_status', { ...release.pin, task_id: taskId });
        expect(lean.body).not.toHaveProperty('result');
        // REST in 3.0 (adcp_major_version: 3) reads the same task with no release of its own at the root.
        const rest = await fetch(`${gw.url}/api/tasks/tasks_get`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify({ adcp_major_version: 3, task_id: taskId }) });
        const restBody = (await rest.json()) as Json;
        expect(restBody).toMatchObject({ task_id: taskId, status: 'completed', result: { media_buy_id: done.body.result.media_buy_id } });
        expect(restBody).not.toHaveProperty('adcp_version');

        // A2A's own tasks/get follows the AdCP task: its result is the buy, in the task's release.
        const a2aTask = (await a2aRpc('tasks/get', { id: taskId })).result as Json;
        expect(a2aTask).toMatchObject({ id: taskId, status: { state: 'completed' }, artifacts: [{ name: 'result' }] });
        const a2aResult = a2aTask.artifacts[0].parts.filter((p: Json) => p.kind === 'data').at(-1).data as Json;
        expect(a2aResult.media_buy_id).toBe(done.body.result.media_buy_id);
        release.valid('create_media_buy', a2aResult);

        const hooks = (await eventually(() => {
          const got = receiver.received.filter((w) => w.json.task_id === taskId);
          return got.some((w) => w.json.status === 'completed') ? got : undefined;
        }, 20_000, `the ${tag} completed webhook`))!;
        expect(hooks.map((w) => w.json.status)).toEqual(['working', 'completed']);
        for (const w of hooks) {
          expect(w.path).toBe(`/hooks/create_media_buy/url-op-${tag}`);
          expect(w.json).toMatchObject({ task_id: taskId, operation_id: operationId, task_type: 'create_media_buy', protocol: 'media-buy', context });
          release.validWebhook(w.json);
          if (release.name === '3.1') {
            expect(w.json.token).toBe(token);
            expect(w.json.notification_id).toMatch(/^[A-Za-z0-9_.:-]{1,255}$/);
          } else {
            // 3.0's webhooks as they always were.
            expect(w.json).not.toHaveProperty('token');
            expect(w.json).not.toHaveProperty('notification_id');
            expect(Object.keys(w.json)).toEqual(['idempotency_key', 'task_id', 'operation_id', 'task_type', 'domain', 'protocol', 'status', 'timestamp', 'message', ...(w.json.result ? ['result'] : []), 'context']);
          }
        }
        if (release.name === '3.1') expect(new Set(hooks.map((w) => w.json.notification_id)).size).toBe(2);
        const completed = hooks.find((w) => w.json.status === 'completed')!;
        expect(completed.json.result.media_buy_id).toBe(done.body.result.media_buy_id);
        release.valid('create_media_buy', completed.json.result);

        // Signed as every webhook is (RFC 9421 by default): the official SDK verifies each against our JWKS.
        const jwks = ((await (await fetch(`${gw.url}/.well-known/jwks.json`)).json()) as { keys: Record<string, unknown>[] }).keys;
        const verdicts = await sdkVerifyWebhooks(jwks, hooks.map((w) => ({ method: w.method, url: w.url, headers: w.headers, body: w.body })));
        expect(verdicts.map((v) => v.status)).toEqual(['verified', 'verified']);
      }, 60_000);
    });

    it('list_tasks pages with a cursor in the sort asked for, and filters by protocol, context text and time', async () => {
      const created: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await mcp('create_media_buy', {
          ...V31.pin,
          brand: { domain: 'acme-outdoor.com' },
          start_time: 'asap',
          end_time: future(20),
          packages: [{ product_id: 'premium_ctv_guaranteed', pricing_option_id: 'cpm_usd_guaranteed', budget: 20000 + i }],
          idempotency_key: `t31-page-${randomUUID()}`,
        });
        created.push(r.body.task_id as string);
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await mcp('list_tasks', { ...V31.pin, filters: { task_ids: created }, sort: { field: 'created_at', direction: 'asc' }, pagination: { max_results: 2, ...(cursor ? { cursor } : {}) } });
        V31.valid('list_tasks', page.body);
        expect(page.body.query_summary.total_matching).toBe(3);
        seen.push(...page.body.tasks.map((t: Json) => t.task_id));
        cursor = page.body.pagination.has_more ? page.body.pagination.cursor : undefined;
      } while (cursor);
      expect(seen).toEqual(created);

      const other = await mcp('list_tasks', { ...V31.pin, filters: { task_ids: created, protocols: ['signals'] } });
      expect(other.body).toMatchObject({ query_summary: { total_matching: 0, returned: 0 }, tasks: [] });
      const later = await mcp('list_tasks', { ...V31.pin, filters: { task_ids: created, created_after: future(1) } });
      expect(later.body.tasks).toEqual([]);
      // context_contains finds a task by the resource it is about (its media buy's id, told once approved).
      await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t, note: "IO signed") }', { t: created[1] }, seller);
      const buyId = (await mcp('get_task_status', { ...V31.pin, task_id: created[1], include_result: true })).body.result.media_buy_id as string;
      expect(buyId).toEqual(expect.any(String));
      const byText = await mcp('list_tasks', { ...V31.pin, filters: { context_contains: buyId } });
      expect(byText.body.tasks.map((t: Json) => t.task_id)).toEqual([created[1]]);
    });

    it('get_task_status and list_tasks refuse malformed input with 3.1 errors, never a 5xx', async () => {
      const unknown = await mcp('get_task_status', { ...V31.pin, task_id: 'task_nope' });
      expect(unknown).toMatchObject({ isError: true, body: { adcp_version: '3.1', adcp_error: { code: 'REFERENCE_NOT_FOUND' } } });
      valid(adcp31().validate('core/error.json', unknown.body.adcp_error), '3.1 error');
      for (const args of [{}, { task_id: 7 }, { task_id: 'x', include_result: 'yes' }]) {
        const r = await mcp('get_task_status', { ...V31.pin, ...args });
        expect(r).toMatchObject({ isError: true, body: { adcp_error: { code: expect.stringMatching(/^(INVALID_REQUEST|VALIDATION_ERROR)$/) } } });
      }
      for (const args of [{ filters: { statuses: ['sleeping'] } }, { sort: { field: 'budget' } }, { pagination: { cursor: 'not-a-cursor' } }, { filters: { task_ids: [] } }]) {
        const r = await mcp('list_tasks', { ...V31.pin, ...args });
        expect(r).toMatchObject({ isError: true, body: { adcp_error: { code: expect.stringMatching(/^(INVALID_REQUEST|VALIDATION_ERROR)$/) } } });
        valid(adcp31().validate('core/error.json', r.body.adcp_error), '3.1 error');
      }
    });
  });
}

suite('SQLite', async () => ({ env: {}, cleanup: async () => {} }));
describeWith('PostgreSQL', PG_ADMIN_URL !== undefined, 'on PostgreSQL', () => {
  suite('PostgreSQL', async () => {
    const db = await createTestDatabase('adcp_t31');
    return { env: { EVENT_STORE_URL: db.url }, cleanup: db.drop };
  });
});
