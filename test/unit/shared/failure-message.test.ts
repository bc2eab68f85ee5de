import { AppError, failureMessage } from '../../../src/shared/errors';

/**
 * Issue 45, finding 5: a failed task's message outlives the call (tasks_get, webhooks, the public
 * task events), so it is the error code's fixed sentence, never the error's own text.
 */
describe('failureMessage', () => {
  it('says an AppError by its code, in fixed words, not its message', () => {
    const said = failureMessage(new AppError('CONFLICT', 'buyer_ref ref-9 is already used by media buy mb_other', 'buyer_ref'));
    expect(said).toBe('The request conflicts with an existing resource (CONFLICT)');
    expect(said).not.toMatch(/ref-9|mb_other/);
  });

  it('says any other error is internal, and nothing of its text', () => {
    const said = failureMessage(new Error('connect ECONNREFUSED 10.0.0.7:5432 (postgres://adcp@db.internal/adcp)'));
    expect(said).toBe('Internal error (INTERNAL_ERROR)');
    expect(failureMessage('a thrown string')).toBe('Internal error (INTERNAL_ERROR)');
  });
});
