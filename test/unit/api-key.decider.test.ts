import { apiKeyDecider, type ApiKeyCommand, type ApiKeyEvent } from '../../src/domain/api-key/api-key';
import { AppError } from '../../src/shared/errors';

/** given events, when a command, then events (or an error with a code and field). */
function given(events: ApiKeyEvent[]) {
  const state = events.reduce(apiKeyDecider.evolve, apiKeyDecider.initialState());
  return {
    when: (command: ApiKeyCommand) => ({
      then: (expected: ApiKeyEvent[]) => expect(apiKeyDecider.decide(command, state)).toEqual(expected),
      thenError: (code: string, field?: string) => {
        let caught: unknown;
        try {
          apiKeyDecider.decide(command, state);
        } catch (err) {
          caught = err;
        }
        expect(caught).toBeInstanceOf(AppError);
        expect({ code: (caught as AppError).code, field: (caught as AppError).field }).toEqual({ code, field });
      },
    }),
  };
}

const now = '2026-11-23T10:00:00.000Z';
const issue: ApiKeyCommand = { type: 'IssueApiKey', keyId: 'k1', org: 'Acme Media', role: 'buyer', prefix: 'abcdefgh', salt: 's', hash: 'h', now };
const issued: ApiKeyEvent = {
  type: 'ApiKeyIssued',
  data: { keyId: 'k1', org: 'Acme Media', role: 'buyer', prefix: 'abcdefgh', salt: 's', hash: 'h', issuedAt: now },
};

describe('api key decider', () => {
  it('issues a new key', () => given([]).when(issue).then([issued]));
  it('refuses to issue the same key id twice', () => given([issued]).when(issue).thenError('CONFLICT', 'keyId'));
  it('validates the organisation name', () => given([]).when({ ...issue, org: 'a/b' }).thenError('VALIDATION_ERROR', 'org'));
  it('revokes an active key', () =>
    given([issued]).when({ type: 'RevokeApiKey', keyId: 'k1', now }).then([{ type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: now } }]));
  it('revoking an unknown key is NOT_FOUND', () => given([]).when({ type: 'RevokeApiKey', keyId: 'k1', now }).thenError('NOT_FOUND', 'keyId'));
  it('revoking twice is INVALID_STATE', () =>
    given([issued, { type: 'ApiKeyRevoked', data: { keyId: 'k1', revokedAt: now } }])
      .when({ type: 'RevokeApiKey', keyId: 'k1', now })
      .thenError('INVALID_STATE', 'keyId'));
});
