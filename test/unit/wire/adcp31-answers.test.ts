import { adcp30 } from '../../../src/wire/adcp3/answers';
import { validateAdcp3Response } from '../../../src/wire/adcp3/schemas';
import { adcp31 as codec31 } from '../../../src/wire/adcp31/answers';
import { adcp31 } from '../../support/adcp31';

type Json = Record<string, any>;

const now = new Date('2026-06-01T12:00:00Z');
const ctx = { now };

/** A buy as the tasks return it (application/tasks/media-buy-tasks.ts mediaBuyView). */
function buy(status: string, extra: Json = {}): Json {
  return {
    media_buy_id: 'mb_1',
    buyer_ref: 'ref-1',
    status,
    currency: 'USD',
    total_budget: 3000,
    start_time: '2026-05-30T00:00:00Z',
    end_time: '2026-07-01T00:00:00Z',
    packages: [{ package_id: 'pkg_1', product_id: 'news', pricing_option_id: 'cpm', budget: 3000, creative_ids: ['c1'] }],
    revision: 2,
    created_at: '2026-05-29T00:00:00Z',
    ...extra,
  };
}

/** A 3.1 answer as the MCP binding sends it: the envelope (the echo) and the codec's answer. */
const sent31 = (task: string, result: Json): Json => ({ adcp_version: '3.1', ...codec31.answer(task, result, ctx) });

/**
 * The 3.1 codec's media-buy answers (wire/adcp31/{products,media-buys}.ts), from results shaped as
 * the tasks return them: each valid against 3.1.19, the 3.0 codec's answer for the same result
 * still valid against 3.0.6 and without any 3.1 field.
 */
describe('AdCP 3.1 media-buy answers', () => {
  it('create: the task status completed, the lifecycle in media_buy_status, confirmed_at and revision', () => {
    const result = buy('active', { confirmed_at: '2026-05-29T00:00:01Z' });
    const answer = sent31('create_media_buy', result);
    expect(answer).toMatchObject({ status: 'completed', media_buy_status: 'active', confirmed_at: '2026-05-29T00:00:01Z', revision: 2 });
    expect(adcp31().validateResponse('create_media_buy', answer)).toMatchObject({ valid: true });
    const three = adcp30.answer('create_media_buy', result, ctx);
    expect(three).toMatchObject({ status: 'active' });
    expect(three.media_buy_status).toBeUndefined();
    expect(validateAdcp3Response('create_media_buy', three)).toMatchObject({ valid: true });
    // A buy still waiting for creatives says so in media_buy_status, as 3.0 said in status.
    expect(sent31('create_media_buy', buy('active', { packages: [{ ...result.packages[0], creative_ids: [] }] }))).toMatchObject({ status: 'completed', media_buy_status: 'pending_creatives' });
  });

  it('create awaiting approval: 3.0\'s submitted envelope, valid in 3.1 too', () => {
    const answer = sent31('create_media_buy', buy('pending', { task_id: 'task_1', message: 'awaiting approval' }));
    expect(answer).toEqual({ adcp_version: '3.1', status: 'submitted', task_id: 'task_1', message: 'awaiting approval' });
    expect(adcp31().validateResponse('create_media_buy', answer)).toMatchObject({ valid: true });
  });

  it('update: completed, media_buy_status and revision; a buy awaiting approval is pending_start with no implementation date', () => {
    const answer = sent31('update_media_buy', buy('paused'));
    expect(answer).toMatchObject({ status: 'completed', media_buy_status: 'paused', revision: 2 });
    expect(adcp31().validateResponse('update_media_buy', answer)).toMatchObject({ valid: true });
    const pending = sent31('update_media_buy', buy('pending'));
    expect(pending).toMatchObject({ status: 'completed', media_buy_status: 'pending_start', implementation_date: null });
    expect(adcp31().validateResponse('update_media_buy', pending)).toMatchObject({ valid: true });
    expect(validateAdcp3Response('update_media_buy', adcp30.answer('update_media_buy', buy('paused'), ctx))).toMatchObject({ valid: true });
  });

  it('get_media_buys: every buy has revision and confirmed_at, null while awaiting approval or rejected', () => {
    const result = { media_buys: [buy('active', { confirmed_at: '2026-05-29T00:00:01Z' }), buy('pending', { media_buy_id: 'mb_2' }), buy('rejected', { media_buy_id: 'mb_3' })] };
    const answer: Json = { ...sent31('get_media_buys', result), status: 'completed' };
    expect(answer.media_buys.map((b: Json) => [b.status, b.confirmed_at, b.revision])).toEqual([
      ['active', '2026-05-29T00:00:01Z', 2],
      ['pending_start', null, 2],
      ['rejected', null, 2],
    ]);
    expect(adcp31().validateResponse('get_media_buys', answer)).toMatchObject({ valid: true });
    const three = adcp30.answer('get_media_buys', result, ctx);
    expect(three.media_buys[1].confirmed_at).toBeUndefined();
    expect(validateAdcp3Response('get_media_buys', three)).toMatchObject({ valid: true });
  });

  it('get_products: cache_scope as the task tells it (public when it does not), never in 3.0', () => {
    const product = { product_id: 'news', name: 'News', description: 'd', publisher_properties: [{ publisher_domain: 'example.com', selection_type: 'all' }], format_ids: [{ agent_url: 'https://creative.adcontextprotocol.org', id: 'display_300x250' }], delivery_type: 'non_guaranteed', pricing_options: [{ pricing_option_id: 'cpm', pricing_model: 'cpm', price: 10, currency: 'USD' }] };
    for (const [scope, expected] of [['account', 'account'], ['public', 'public'], [undefined, 'public']] as const) {
      const answer: Json = { ...sent31('get_products', { products: [product], ...(scope ? { cache_scope: scope } : {}) }), status: 'completed' };
      expect(answer.cache_scope).toBe(expected);
      expect(adcp31().validateResponse('get_products', answer)).toMatchObject({ valid: true });
      const three = adcp30.answer('get_products', { products: [product], cache_scope: scope }, ctx);
      expect(three).not.toHaveProperty('cache_scope');
      expect(validateAdcp3Response('get_products', three)).toMatchObject({ valid: true });
    }
  });

  it('errors carry the task status failed in 3.1 (its envelope requires one), nothing in 3.0', () => {
    expect(codec31.failedEnvelope()).toEqual({ status: 'failed' });
    expect(adcp30.failedEnvelope()).toEqual({});
  });
});
