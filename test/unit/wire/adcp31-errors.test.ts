import { AppError } from '../../../src/shared/errors';
import { adcp30 } from '../../../src/wire/adcp3/answers';
import { validateAdcp3 } from '../../../src/wire/adcp3/schemas';
import { adcp31 as codec31 } from '../../../src/wire/adcp31/answers';
import { pointerOf } from '../../../src/wire/adcp31/errors';
import { parseInput } from '../../../src/application/validation';
import { adcp31 } from '../../support/adcp31';
import { z } from 'zod';

/** The error a task input schema refuses `input` with (the domain's one way to refuse input). */
function refusal(schema: z.ZodType, input: unknown): AppError {
  try {
    parseInput(schema, input);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('the input was accepted');
}

const buyInput = z.object({ media_buy_id: z.string(), packages: z.array(z.object({ package_id: z.string(), budget: z.number().positive() })).min(1), name: z.string().max(3).optional() });

/**
 * 3.1's error objects from the domain's AppErrors (wire/adcp31/errors.ts): each of the codes 3.1
 * renames or adds, `recovery` on every one, `issues[]` for validation errors, details per
 * error-details/*.json; every one valid against 3.1.19's core/error.json, and 3.0's answer for the
 * same error unchanged (no 3.1 field, no domain-internal detail).
 */
describe('AdCP 3.1 errors', () => {
  const both = (err: AppError, task = 'get_products', request: unknown = {}) => {
    const e31 = codec31.error(task, request, err);
    const e30 = adcp30.error(task, request, err);
    expect(adcp31().validate('core/error.json', e31)).toMatchObject({ valid: true });
    expect(validateAdcp3('core/error.json', e30)).toMatchObject({ valid: true });
    return { e31, e30 };
  };

  it('a missing credential is AUTH_MISSING (correctable), a refused one AUTH_INVALID (terminal); 3.0 says AUTH_REQUIRED for both, without details', () => {
    const missing = both(new AppError('UNAUTHENTICATED', 'credentials are required', undefined, { credential: 'missing' }));
    expect(missing.e31).toEqual({ code: 'AUTH_MISSING', message: 'credentials are required', recovery: 'correctable' });
    expect(missing.e30).toEqual({ code: 'AUTH_REQUIRED', message: 'credentials are required', recovery: 'correctable' });
    const refused = both(new AppError('UNAUTHENTICATED', 'unknown or revoked API key', undefined, { credential: 'rejected' }));
    expect(refused.e31).toEqual({ code: 'AUTH_INVALID', message: 'unknown or revoked API key', recovery: 'terminal' });
    expect(refused.e30).toEqual({ code: 'AUTH_REQUIRED', message: 'unknown or revoked API key', recovery: 'correctable' });
  });

  it('an unknown proposal is PROPOSAL_NOT_FOUND in 3.1, REFERENCE_NOT_FOUND in 3.0', () => {
    const { e31, e30 } = both(new AppError('NOT_FOUND', 'no proposal p1', 'proposal_id', { resource: 'proposal' }), 'create_media_buy');
    expect(e31).toEqual({ code: 'PROPOSAL_NOT_FOUND', message: 'no proposal p1', recovery: 'correctable', field: 'proposal_id' });
    expect(e30).toMatchObject({ code: 'REFERENCE_NOT_FOUND', field: 'proposal_id' });
  });

  it('pausing or resuming a buy whose status does not allow it now is ACTION_NOT_ALLOWED with its error-details; a terminal buy stays INVALID_STATE; cancelling NOT_CANCELLABLE', () => {
    const pause = both(new AppError('INVALID_STATE', 'cannot pause a media buy that is paused', 'updates.status', { current_status: 'paused', action: 'pause' }), 'update_media_buy', { paused: true });
    expect(pause.e31).toEqual({ code: 'ACTION_NOT_ALLOWED', message: 'cannot pause a media buy that is paused', recovery: 'correctable', field: 'status', details: { current_status: 'paused', attempted_action: 'pause', reason: 'wrong_status', currently_available_actions: ['resume', 'cancel', 'update_budget', 'update_dates', 'update_packages'].map((action) => ({ action, mode: 'self_serve' })) } });
    expect(adcp31().validate('error-details/action-not-allowed.json', pause.e31.details)).toMatchObject({ valid: true });
    expect(pause.e30).toMatchObject({ code: 'INVALID_STATE', details: { current_status: 'paused' } });
    const resume = codec31.error('update_media_buy', {}, new AppError('INVALID_STATE', 'x', 'updates.status', { current_status: 'pending', action: 'resume' }));
    expect(resume).toMatchObject({ code: 'ACTION_NOT_ALLOWED', details: { attempted_action: 'resume' } });
    for (const current of ['canceled', 'completed', 'rejected']) {
      expect(codec31.error('update_media_buy', {}, new AppError('INVALID_STATE', 'x', 'status', { current_status: current, action: 'pause' }))).toMatchObject({ code: 'INVALID_STATE', recovery: 'correctable' });
    }
    expect(codec31.error('update_media_buy', {}, new AppError('INVALID_STATE', 'x', 'updates.status', { current_status: 'canceled', action: 'cancel' }))).toMatchObject({ code: 'NOT_CANCELLABLE', recovery: 'correctable' });
  });

  it('a refused input lists every failing field in issues[] (pointer, message, JSON Schema keyword), field = issues[0]; 3.0 keeps field alone', () => {
    const err = refusal(buyInput, { media_buy_id: 'mb', packages: [{ package_id: 'p', budget: -1 }, { package_id: 'q', budget: 'x' }], name: 'toolong' });
    const { e31, e30 } = both(err, 'create_media_buy');
    expect(e31).toMatchObject({ code: 'VALIDATION_ERROR', recovery: 'correctable', field: 'packages[0].budget' });
    expect(e31.issues).toEqual([
      { pointer: '/packages/0/budget', message: expect.any(String), keyword: 'minimum' },
      { pointer: '/packages/1/budget', message: expect.any(String), keyword: 'type' },
      { pointer: '/name', message: expect.any(String), keyword: 'maxLength' },
    ]);
    expect(e31.details).toBeUndefined();
    expect(e30).toEqual({ code: 'VALIDATION_ERROR', message: err.message, recovery: 'correctable', field: 'packages[0].budget' });
    const missing = both(refusal(buyInput, { packages: [] }));
    expect(missing.e31).toMatchObject({ code: 'INVALID_REQUEST', field: 'media_buy_id', issues: [{ pointer: '/media_buy_id', keyword: 'required' }, { pointer: '/packages', keyword: 'minItems' }] });
  });

  it('an update in 3.0\'s shape names its fields without the spec\'s updates. wrapper, in issues[] too', () => {
    const err = new AppError('VALIDATION_ERROR', 'updates.packages[0].budget: bad', 'updates.packages[0].budget', { issues: [{ field: 'updates.packages[0].budget', message: 'bad', keyword: 'type' }] });
    expect(codec31.error('update_media_buy', { media_buy_id: 'mb', packages: [] }, err)).toMatchObject({ field: 'packages[0].budget', issues: [{ pointer: '/packages/0/budget', keyword: 'type' }] });
    // Sent in the spec's shape, the request names them with it.
    expect(codec31.error('update_media_buy', { media_buy_id: 'mb', updates: {} }, err)).toMatchObject({ field: 'updates.packages[0].budget', issues: [{ pointer: '/updates/packages/0/budget' }] });
  });

  it('an idempotency conflict names no field and, in 3.1, its recovery (correctable): 3.0 answers code and message only', () => {
    const { e31, e30 } = both(new AppError('IDEMPOTENCY_CONFLICT', 'reused', 'idempotency_key'), 'create_media_buy');
    expect(e31).toEqual({ code: 'IDEMPOTENCY_CONFLICT', message: 'idempotency_key was already used with a different payload', recovery: 'correctable' });
    expect(e30).toEqual({ code: 'IDEMPOTENCY_CONFLICT', message: 'idempotency_key was already used with a different payload' });
  });

  it('a concurrent write is CONFLICT (transient) with error-details/conflict.json, never the event store\'s stream name', () => {
    const { e31 } = both(new AppError('CONFLICT', 'stream media-buy-mb_1 is at version 3, expected 2', undefined, { streamId: 'media-buy-mb_1', expected: 2, actual: 3 }), 'update_media_buy');
    expect(e31).toMatchObject({ code: 'CONFLICT', recovery: 'transient', details: { expected_version: '2', current_version: 3 } });
    expect(JSON.stringify(e31.details)).not.toContain('streamId');
    expect(adcp31().validate('error-details/conflict.json', e31.details)).toMatchObject({ valid: true });
  });

  it('rate limits and outages are transient with retry_after at the top; an account to sync first keeps the recovery the domain names', () => {
    expect(both(new AppError('RATE_LIMITED', 'slow down', undefined, { retry_after: 12 })).e31).toEqual({ code: 'RATE_LIMITED', message: 'slow down', recovery: 'transient', retry_after: 12 });
    expect(both(new AppError('UNAVAILABLE', 'down')).e31).toMatchObject({ code: 'SERVICE_UNAVAILABLE', recovery: 'transient', retry_after: 30 });
    expect(both(new AppError('ACCOUNT_NOT_FOUND', 'sync it', 'account', { recovery: 'correctable' })).e31).toEqual({ code: 'ACCOUNT_NOT_FOUND', message: 'sync it', recovery: 'correctable', field: 'account' });
    expect(both(new AppError('ACCOUNT_NOT_FOUND', 'gone', 'account')).e31.recovery).toBe('terminal');
  });

  it('field paths become RFC 6901 pointers', () => {
    expect(pointerOf('packages[0].targeting_overlay.geo_countries[2]')).toBe('/packages/0/targeting_overlay/geo_countries/2');
    expect(pointerOf('a/b.c~d')).toBe('/a~1b/c~0d');
    expect(pointerOf('')).toBe('');
  });
});
