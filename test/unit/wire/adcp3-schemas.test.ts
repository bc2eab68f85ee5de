import { adcp3ToolNames, validateAdcp3, validateAdcp3Request, validateAdcp3Response } from '../../../src/wire/adcp3/schemas';

describe('AdCP 3.0 schema validation (@adcp/sdk bundled schemas)', () => {
  it('lists the manifest tools', () => {
    expect(adcp3ToolNames()).toEqual(expect.arrayContaining(['create_media_buy', 'get_adcp_capabilities', 'update_media_buy']));
  });

  it('create_media_buy: a synchronous success passes', () => {
    expect(validateAdcp3Response('create_media_buy', { media_buy_id: 'mb_1', packages: [{ package_id: 'p1' }] })).toEqual({
      valid: true,
      errors: [],
      schema: 'media-buy/create-media-buy-response.json',
    });
  });

  it('create_media_buy: a lone error object is not a 3.0 answer, with readable reasons', () => {
    const r = validateAdcp3Response('create_media_buy', { error: { code: 'X', message: 'y' } });
    expect(r.valid).toBe(false);
    expect(r.errors.length).toBeGreaterThan(0);
    expect(r.errors.length).toBeLessThanOrEqual(10);
    expect(r.errors).toContain("/ must have required property 'media_buy_id' (#/oneOf/0/required)");
  });

  it('create_media_buy: the submitted envelope passes, and needs its task_id', () => {
    expect(validateAdcp3Response('create_media_buy', { status: 'submitted', task_id: 't1' }).valid).toBe(true);
    expect(validateAdcp3Response('create_media_buy', { status: 'submitted' }).valid).toBe(false);
  });

  it('a working answer is checked against the tool’s per-status schema', () => {
    expect(validateAdcp3Response('update_media_buy', { status: 'working', percentage: 40 })).toMatchObject({
      valid: true,
      schema: 'media-buy/update-media-buy-async-response-working.json',
    });
    expect(validateAdcp3Response('update_media_buy', { status: 'working', percentage: 140 }).valid).toBe(false);
  });

  it('get_adcp_capabilities: versions, idempotency and protocols pass', () => {
    const body = { adcp: { major_versions: [3], idempotency: { supported: true, replay_ttl_seconds: 86400 } }, supported_protocols: ['media_buy'] };
    expect(validateAdcp3Response('get_adcp_capabilities', body)).toEqual({ valid: true, errors: [], schema: 'protocol/get-adcp-capabilities-response.json' });
    expect(validateAdcp3Response('get_adcp_capabilities', { ...body, adcp: { major_versions: [3], idempotency: { supported: true } } }).valid).toBe(false);
  });

  it('validates by schema path: core/error.json', () => {
    expect(validateAdcp3('core/error.json', { code: 'INVALID_REQUEST', message: 'm', recovery: 'correctable' }).valid).toBe(true);
    const r = validateAdcp3('core/error.json', { code: 'INVALID_REQUEST', message: 'm', recovery: 'later' });
    expect(r.valid).toBe(false);
    expect(r.errors[0]).toMatch(/^\/recovery must be equal to one of the allowed values/);
  });

  it('validates requests against the request schema', () => {
    expect(validateAdcp3Request('get_adcp_capabilities', {})).toMatchObject({ valid: true, schema: 'protocol/get-adcp-capabilities-request.json' });
  });

  it('every bundled tool schema compiles', () => {
    for (const tool of adcp3ToolNames().filter((t) => t !== 'comply_test_controller')) {
      expect(() => validateAdcp3Request(tool, {})).not.toThrow();
      expect(() => validateAdcp3Response(tool, {})).not.toThrow();
    }
  });

  it('an unknown tool or schema throws, naming it', () => {
    expect(() => validateAdcp3Response('no_such_tool', {})).toThrow(/no_such_tool/);
    expect(() => validateAdcp3Request('no_such_tool', {})).toThrow(/no_such_tool/);
    expect(() => validateAdcp3('core/nope.json', {})).toThrow(/core\/nope\.json/);
  });
});
