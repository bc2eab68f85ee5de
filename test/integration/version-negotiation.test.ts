import { randomUUID } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { validateAdcp3, validateAdcp3Response } from '../../src/wire/adcp3/schemas';
import { adcp31 } from '../support/adcp31';
import { startTestGateway } from '../support/gateway';
import { mcpCall } from '../support/mcp-call';

type Json = Record<string, any>;

let messageSeq = 0;

/**
 * AdCP version negotiation over MCP and A2A (issue 36, first slice): a call pinned
 * `adcp_version: "3.1"` is answered in 3.1 and says so at the root; a newer 3.x is served as 3.1;
 * another major is VERSION_UNSUPPORTED with the releases to retry with; a call without a pin is
 * answered exactly as before, valid against 3.0.6. 3.1 answers are held to the 3.1.19 schemas
 * where this slice makes them complete.
 */
describe('AdCP version negotiation, MCP and A2A', () => {
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let buyer: string;

  /** One call over either binding: the AdCP answer, and whether it was an error. */
  type Call = (name: string, args: Json, options?: { validate?: boolean }) => Promise<{ isError: boolean; body: Json }>;

  const mcp: Call = (name, args, options) => mcpCall(gw.url, buyer, name, args, options);

  /** message/send with one DataPart { skill, parameters }, as @adcp/sdk's A2A client sends it; the answer is the artifact's DataPart. */
  const a2a: Call = async (name, args, options = {}) => {
    const res = await fetch(`${gw.url}/a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId: `v-${++messageSeq}`, parts: [{ kind: 'data', data: { skill: name, parameters: args } }] } } }),
    });
    expect(res.status).toBe(200);
    const { result } = (await res.json()) as { result: Json };
    expect(result).toMatchObject({ kind: 'task', status: { state: 'completed' } });
    const artifact = result.artifacts[0];
    const body = artifact.parts.filter((p: Json) => p.kind === 'data').at(-1).data as Json;
    const isError = artifact.name === 'error';
    if (!isError && options.validate !== false) expect({ name, validation: validateAdcp3Response(name, body) }).toMatchObject({ name, validation: { valid: true } });
    return { isError, body };
  };

  beforeAll(async () => {
    gw = await startTestGateway();
    buyer = (await issueApiKey(gw.app.store, { org: 'acme', role: 'buyer' }, { now: new Date().toISOString() })).key;
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
  });
  afterAll(async () => {
    await gw?.stop();
  });

  /** The envelope 3.1 tolerates on every request: a read's idempotency_key, context, ext, and both version fields. */
  const pinned31 = (extra: Json = {}) => ({ adcp_version: '3.1', adcp_major_version: 3, idempotency_key: randomUUID(), context: { correlation_id: `c-${randomUUID()}` }, ext: { acme: { trace: 't1' } }, ...extra });
  const brief = { buying_mode: 'brief', brief: 'sports video' };

  describe.each<[string, () => Call]>([
    ['MCP', () => mcp],
    ['A2A', () => a2a],
  ])('over %s', (_binding, callOf) => {
    it('get_adcp_capabilities pinned to 3.1: answered in 3.1, echoed, advertising 3.0 and 3.1; valid against 3.1.19', async () => {
      const args = pinned31();
      // A 3.1 answer, held to 3.1.19 below (its 3.1 declarations are not 3.0.6's).
      const { isError, body } = await callOf()('get_adcp_capabilities', args, { validate: false });
      expect(isError).toBe(false);
      expect(body).toMatchObject({ adcp_version: '3.1', adcp: { supported_versions: ['3.0', '3.1'], major_versions: [3] }, context: args.context });
      expect(adcp31().validateResponse('get_adcp_capabilities', body)).toMatchObject({ valid: true });
    });

    it('get_products pinned to 3.1 with a read idempotency_key and context: the 3.0 answer plus the echo', async () => {
      const call = callOf();
      const args = pinned31(brief);
      const pinned = await call('get_products', args);
      expect(pinned.isError).toBe(false);
      expect(pinned.body).toMatchObject({ adcp_version: '3.1', context: args.context });
      expect(pinned.body.products.length).toBeGreaterThan(0);
      // 3.1.19's get-products-response requires cache_scope ("public" without an account).
      expect(pinned.body.cache_scope).toBe('public');
      expect(adcp31().validateResponse('get_products', pinned.body)).toMatchObject({ valid: true });
      // Nothing but 3.1's fields tells it from the unpinned answer (same products, same order).
      const plain = await call('get_products', { ...brief, context: args.context });
      const { adcp_version: _v, cache_scope: _scope, ...rest } = pinned.body;
      expect(rest).toEqual(plain.body);
    });

    it('a newer 3.x pin is served as 3.1 (downshift), and a "3.0" pin as 3.0, each named', async () => {
      const call = callOf();
      expect((await call('get_products', { ...brief, adcp_version: '3.4', adcp_major_version: 3 })).body.adcp_version).toBe('3.1');
      const three = await call('get_products', { ...brief, adcp_version: '3.0', adcp_major_version: 3 });
      expect(three).toMatchObject({ isError: false, body: { adcp_version: '3.0' } });
    });

    it('another major is VERSION_UNSUPPORTED, correctable, with supported_versions; valid 3.0 and 3.1.19 error answers', async () => {
      const call = callOf();
      for (const [tool, args] of [
        ['get_adcp_capabilities', { adcp_version: '4.0', adcp_major_version: 4, context: { n: 1 } }],
        ['get_products', { ...brief, adcp_version: '4.0', context: { n: 2 } }],
        ['get_products', { ...brief, adcp_major_version: 4, context: { n: 3 } }],
        // Fields that disagree at the major.
        ['get_products', { ...brief, adcp_version: '3.1', adcp_major_version: 4, context: { n: 4 } }],
      ] as const) {
        const { isError, body } = await call(tool, args);
        expect(isError).toBe(true);
        expect(body).toMatchObject({ adcp_error: { code: 'VERSION_UNSUPPORTED', recovery: 'correctable', details: { supported_versions: ['3.0', '3.1'], supported_majors: [3] } }, context: args.context });
        expect(body.errors).toEqual([body.adcp_error]);
        // Nothing was served, so no release is named at the root.
        expect(body.adcp_version).toBeUndefined();
        for (const error of [body.adcp_error, ...body.errors]) {
          expect(validateAdcp3('core/error.json', error)).toMatchObject({ valid: true });
          expect(adcp31().validate('core/error.json', error)).toMatchObject({ valid: true });
        }
      }
    });

    it('a pin with a patch ("3.1.19") is an invalid request', async () => {
      const { isError, body } = await callOf()('get_products', { ...brief, adcp_version: '3.1.19' });
      expect(isError).toBe(true);
      expect(body.adcp_error).toMatchObject({ code: 'INVALID_REQUEST', field: 'adcp_version', recovery: 'correctable' });
    });

    /** Issue 45, finding 8 (b): a 5000-character pin came back 8 times over MCP (message and details, in adcp_error and errors[], in structuredContent and the text). */
    it('a huge pin is echoed once per error, cut to 32 characters with an ellipsis; still valid error answers', async () => {
      for (const [pin, code] of [
        [`3.1-${'x'.repeat(5000)}`, 'VERSION_UNSUPPORTED'],
        [`4.${'7'.repeat(5000)}`, 'VERSION_UNSUPPORTED'],
        ['y'.repeat(5000), 'INVALID_REQUEST'],
      ] as const) {
        const { isError, body } = await callOf()('get_products', { ...brief, adcp_version: pin });
        expect(isError).toBe(true);
        expect(body.adcp_error).toMatchObject({ code, field: 'adcp_version', recovery: 'correctable' });
        expect(body.adcp_error.message).toContain(`${JSON.stringify(pin).slice(0, 32)}…`);
        const text = JSON.stringify(body);
        // Once in adcp_error, once in its copy in errors[]: never more, never longer.
        expect(text.split(pin.slice(0, 31)).length - 1).toBe(2);
        expect(text).not.toContain(pin.slice(0, 32));
        expect(body.adcp_error.details?.adcp_version).toBeUndefined();
        for (const error of [body.adcp_error, ...body.errors]) {
          expect(validateAdcp3('core/error.json', error)).toMatchObject({ valid: true });
          expect(adcp31().validate('core/error.json', error)).toMatchObject({ valid: true });
        }
      }
    });

    it('a pin that is not a string (a number, null, an object) is an invalid request', async () => {
      for (const pin of [3.1, null, { release: '3.1' }]) {
        const { isError, body } = await callOf()('get_products', { ...brief, adcp_version: pin });
        expect({ pin, isError, error: body.adcp_error }).toMatchObject({ pin, isError: true, error: { code: 'INVALID_REQUEST', field: 'adcp_version', recovery: 'correctable' } });
      }
    });

    it('an error answered in 3.1 names the release too', async () => {
      const { isError, body } = await callOf()('get_products', pinned31({ buying_mode: 'refine' }));
      expect(isError).toBe(true);
      expect(body).toMatchObject({ adcp_version: '3.1', status: 'failed', adcp_error: { recovery: 'correctable' } });
      expect(adcp31().validate('core/error.json', body.adcp_error)).toMatchObject({ valid: true });
      // As a whole too: 3.1.19 wants the task status on every answer, `failed` here.
      expect(adcp31().validateResponse('get_products', body)).toMatchObject({ valid: true });
    });

    it('without adcp_version, answers are as they were: no echo, valid against 3.0.6 (adcp_major_version: 3 alone too)', async () => {
      const call = callOf();
      for (const extra of [{}, { adcp_major_version: 3 }]) {
        const caps = await call('get_adcp_capabilities', extra);
        expect(caps.isError).toBe(false);
        expect(caps.body.adcp_version).toBeUndefined();
        // 3.0.6 leaves `adcp` open: the releases are discoverable without a pin.
        expect(caps.body.adcp).toMatchObject({ major_versions: [3], supported_versions: ['3.0', '3.1'] });
        const products = await call('get_products', { ...brief, ...extra });
        expect(products.isError).toBe(false);
        expect(products.body.adcp_version).toBeUndefined();
        const error = await call('get_media_buys', { media_buy_ids: 'not-a-list', ...extra });
        expect(error.isError).toBe(true);
        expect(error.body.adcp_version).toBeUndefined();
      }
    });
  });

  /**
   * Issue 45, finding 8 (b): REST took a pin that is not a string for no pin at all (a spec
   * answer, 200) where MCP and A2A refuse it. One rule for every binding: AdCP's error shape,
   * INVALID_REQUEST on adcp_version, 400; and a huge pin is echoed once per error, cut.
   */
  describe('over REST (POST /api/tasks/{task})', () => {
    const rest = async (task: string, body: Json) => {
      const res = await fetch(`${gw.url}/api/tasks/${task}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: JSON.stringify(body) });
      return { status: res.status, text: await res.text() };
    };

    it('a pin that is not a string is refused as over MCP: INVALID_REQUEST on adcp_version, in adcp_error and errors[]', async () => {
      for (const pin of [3.1, null, true, ['3.1'], { release: '3.1' }]) {
        const { status, text } = await rest('get_products', { ...brief, adcp_version: pin, context: { n: 1 } });
        const body = JSON.parse(text) as Json;
        expect({ pin, status, error: body.adcp_error }).toMatchObject({ pin, status: 400, error: { code: 'INVALID_REQUEST', field: 'adcp_version', recovery: 'correctable' } });
        expect(body.errors).toEqual([body.adcp_error]);
        expect(body.context).toEqual({ n: 1 });
        const overMcp = await mcp('get_products', { ...brief, adcp_version: pin });
        expect(overMcp.body.adcp_error).toEqual(body.adcp_error);
      }
    });

    it('a huge pin is echoed once per error, cut', async () => {
      const pin = `3.1-${'x'.repeat(5000)}`;
      const { status, text } = await rest('get_products', { ...brief, adcp_version: pin });
      expect(status).toBe(400);
      expect(text.split(pin.slice(0, 31)).length - 1).toBe(2);
      expect(text.length).toBeLessThan(2000);
    });
  });
});
