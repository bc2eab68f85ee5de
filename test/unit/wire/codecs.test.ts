import { canonicalRequest } from '../../../src/wire/requests';
import { answers3, mediaBuyStatus3, product3 } from '../../../src/wire/adcp3/answers';
import { adcpError } from '../../../src/wire/adcp3/errors';
import { validateAdcp3Response } from '../../../src/wire/adcp3/schemas';
import { AppError } from '../../../src/shared/errors';

const now = new Date('2026-11-24T12:00:00Z');

describe('request codec: both shapes become the spec\'s', () => {
  it('create_media_buy: brand + account + idempotency_key name the buy; creative_assignments become creative_ids', () => {
    const out = canonicalRequest('create_media_buy', {
      brand: { domain: 'Acme-Outdoor.com' },
      account: { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' },
      idempotency_key: 'create-0000000000001',
      packages: [{ product_id: 'p', pricing_option_id: 'o', budget: 10, creative_assignments: [{ creative_id: 'c1' }, { creative_id: 'c2' }] }],
      push_notification_config: { url: 'https://buyer.example.com/hook' },
    });
    expect(out).toMatchObject({
      buyer_ref: 'create-0000000000001',
      brand_manifest: { url: 'https://acme-outdoor.com/', brand: { domain: 'Acme-Outdoor.com' } },
      packages: [{ creative_ids: ['c1', 'c2'] }],
      // 3.0 leaves operation_id optional; the spec's webhooks carry one.
      push_notification_config: { url: 'https://buyer.example.com/hook', operation_id: 'create-0000000000001' },
    });
  });

  it('the spec\'s shape passes through untouched', () => {
    const spec = { buyer_ref: 'r1', brand_manifest: { url: 'https://a.example' }, packages: [], start_time: { type: 'asap' }, end_time: 'x' };
    expect(canonicalRequest('create_media_buy', spec)).toEqual(spec);
    const update = { media_buy_id: 'mb', updates: { status: 'pause' } };
    expect(canonicalRequest('update_media_buy', update)).toEqual(update);
  });

  it('update_media_buy: paused / canceled / packages[] become updates {…}', () => {
    expect(canonicalRequest('update_media_buy', { media_buy_id: 'mb', paused: true })).toMatchObject({ updates: { status: 'pause' } });
    expect(canonicalRequest('update_media_buy', { media_buy_id: 'mb', paused: false })).toMatchObject({ updates: { status: 'resume' } });
    expect(canonicalRequest('update_media_buy', { media_buy_id: 'mb', canceled: true, cancellation_reason: 'done', paused: true })).toMatchObject({ updates: { status: 'cancel', reason: 'done' } });
    expect(canonicalRequest('update_media_buy', { media_buy_id: 'mb', packages: [{ package_id: 'p1', budget: 5, creative_assignments: [{ creative_id: 'c' }] }] })).toMatchObject({
      updates: { packages: [{ package_id: 'p1', budget: 5, creative_ids: ['c'] }] },
    });
    expect(() => canonicalRequest('update_media_buy', { media_buy_id: 'mb', new_packages: [] })).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_FEATURE', field: 'new_packages' }));
  });

  it('sync_creatives: [{creative_id, package_id}] becomes the spec\'s map; a malformed pair names itself', () => {
    expect(canonicalRequest('sync_creatives', { creatives: [], assignments: [{ creative_id: 'a', package_id: 'p1' }, { creative_id: 'a', package_id: 'p2' }] })).toMatchObject({ assignments: { a: ['p1', 'p2'] } });
    expect(() => canonicalRequest('sync_creatives', { creatives: [], assignments: [{ creative_id: 'a' }] })).toThrow(expect.objectContaining({ code: 'INVALID_REQUEST', field: 'assignments[0]' }));
  });

  it('get_products: 3.0 channel names filter the catalog\'s', () => {
    expect(canonicalRequest('get_products', { filters: { channels: ['olv', 'display'] } })).toMatchObject({ filters: { channels: ['video', 'display'] } });
  });
});

describe('3.0 answer codec', () => {
  const buy = {
    media_buy_id: 'mb_1',
    buyer_ref: 'r',
    status: 'active',
    currency: 'USD',
    total_budget: 100,
    start_time: '2026-11-20T00:00:00Z',
    end_time: '2026-12-20T00:00:00Z',
    packages: [{ package_id: 'p1', product_id: 'x', pricing_option_id: 'o', budget: 100, creative_ids: [] }],
    revision: 1,
  };

  it('derives the finer 3.0 lifecycle from the spec\'s status', () => {
    expect(mediaBuyStatus3('pending', buy, now)).toBe('pending_start');
    expect(mediaBuyStatus3('active', buy, now)).toBe('pending_creatives');
    const withCreative = { ...buy, packages: [{ ...buy.packages[0], creative_ids: ['c'] }] };
    expect(mediaBuyStatus3('active', withCreative, now)).toBe('active');
    expect(mediaBuyStatus3('active', { ...withCreative, start_time: '2027-01-01T00:00:00Z' }, now)).toBe('pending_start');
    // Once paused, a buy is past the pre-flight states for good.
    expect(mediaBuyStatus3('active', { ...buy, activated: true }, now)).toBe('active');
    expect(mediaBuyStatus3('canceled', buy, now)).toBe('canceled');
  });

  it('answers that validate against the bundled 3.0 schemas', () => {
    const created = answers3.create_media_buy!(buy, { now });
    expect(created).not.toHaveProperty('buyer_ref');
    expect(validateAdcp3Response('create_media_buy', created)).toMatchObject({ valid: true });
    const submitted = answers3.create_media_buy!({ ...buy, status: 'pending', task_id: 't1', message: 'waiting' }, { now });
    expect(submitted).toEqual({ status: 'submitted', task_id: 't1', message: 'waiting' });
    expect(validateAdcp3Response('create_media_buy', submitted)).toMatchObject({ valid: true });
    const listed = answers3.get_media_buys!({ media_buys: [buy], pagination: { has_more: false } }, { now });
    expect(validateAdcp3Response('get_media_buys', listed)).toMatchObject({ valid: true });
    const product = product3({
      product_id: 'p',
      name: 'P',
      description: 'd',
      publisher_properties: [{ publisher_domain: 'news.example', selection_type: 'all' }],
      channels: ['video', 'ctv'],
      delivery_type: 'non_guaranteed',
      format_ids: [{ agent_url: 'https://creative.adcontextprotocol.org', id: 'v' }],
      pricing_options: [{ pricing_option_id: 'a', pricing_model: 'cpm-auction', floor: 12, currency: 'USD' }, { pricing_option_id: 'f', pricing_model: 'flat-fee', price: 500, currency: 'USD' }],
      targeting: {},
    });
    expect(product.channels).toEqual(['olv', 'ctv']);
    expect(product.pricing_options).toEqual([
      { pricing_option_id: 'a', pricing_model: 'cpm', floor_price: 12, currency: 'USD' },
      { pricing_option_id: 'f', pricing_model: 'flat_rate', fixed_price: 500, currency: 'USD' },
    ]);
    expect(validateAdcp3Response('get_products', { products: [product] })).toMatchObject({ valid: true });
  });

  it('errors: 3.0 codes and recovery, the spec\'s update wrapper dropped from fields, a conflict says nothing more', () => {
    const cancel = adcpError(new AppError('INVALID_STATE', 'cannot cancel', 'updates.status', { current_status: 'canceled', action: 'cancel' }), { fieldPrefixToDrop: 'updates.' });
    expect(cancel).toEqual({ code: 'NOT_CANCELLABLE', message: 'cannot cancel', recovery: 'correctable', field: 'status', details: { current_status: 'canceled' } });
    expect(adcpError(new AppError('NOT_FOUND', 'no package', 'updates.packages[0].package_id', { resource: 'package' }))).toMatchObject({ code: 'PACKAGE_NOT_FOUND' });
    expect(adcpError(new AppError('UNAVAILABLE', 'down'))).toMatchObject({ code: 'SERVICE_UNAVAILABLE', recovery: 'transient', retry_after: 30 });
    expect(adcpError(new AppError('IDEMPOTENCY_CONFLICT', 'used before with {"budget": 5}', 'idempotency_key'))).toEqual({ code: 'IDEMPOTENCY_CONFLICT', message: 'idempotency_key was already used with a different payload' });
    const body = { adcp_error: cancel, errors: [cancel] };
    expect(validateAdcp3Response('update_media_buy', body)).toMatchObject({ valid: true });
  });
});
