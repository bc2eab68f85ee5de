import { AppError } from '../../shared/errors';
import { assertNever, type Decider } from '../decider';

export const ROLES = ['buyer', 'seller', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** Only a salted hash of the secret is ever stored; the key itself is shown once at issue. */
export type ApiKeyEvent =
  | {
      readonly type: 'ApiKeyIssued';
      readonly data: {
        readonly keyId: string;
        readonly org: string;
        readonly role: Role;
        readonly prefix: string;
        readonly salt: string;
        readonly hash: string;
        readonly issuedAt: string;
      };
    }
  | { readonly type: 'ApiKeyRevoked'; readonly data: { readonly keyId: string; readonly revokedAt: string } };

export type ApiKeyCommand =
  | {
      readonly type: 'IssueApiKey';
      readonly keyId: string;
      readonly org: string;
      readonly role: Role;
      readonly prefix: string;
      readonly salt: string;
      readonly hash: string;
      readonly now: string;
    }
  | { readonly type: 'RevokeApiKey'; readonly keyId: string; readonly now: string };

export type ApiKeyState =
  | { readonly status: 'none' }
  | { readonly status: 'active' | 'revoked'; readonly keyId: string; readonly org: string; readonly role: Role };

export const apiKeyStream = (keyId: string) => `api-key-${keyId}`;

export const apiKeyDecider: Decider<ApiKeyCommand, ApiKeyEvent, ApiKeyState> = {
  initialState: () => ({ status: 'none' }),

  decide(command, state) {
    switch (command.type) {
      case 'IssueApiKey': {
        if (state.status !== 'none') throw new AppError('CONFLICT', `key ${command.keyId} already exists`, 'keyId');
        if (!/^[\w .@-]{1,100}$/.test(command.org)) {
          throw new AppError('VALIDATION_ERROR', 'org must be 1-100 letters, digits, spaces or ._@-', 'org');
        }
        const { keyId, org, role, prefix, salt, hash, now } = command;
        return [{ type: 'ApiKeyIssued', data: { keyId, org, role, prefix, salt, hash, issuedAt: now } }];
      }
      case 'RevokeApiKey': {
        if (state.status === 'none') throw new AppError('NOT_FOUND', `no key ${command.keyId}`, 'keyId');
        if (state.status === 'revoked') throw new AppError('INVALID_STATE', `key ${command.keyId} is already revoked`, 'keyId');
        return [{ type: 'ApiKeyRevoked', data: { keyId: command.keyId, revokedAt: command.now } }];
      }
      default:
        return assertNever(command);
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'ApiKeyIssued':
        return { status: 'active', keyId: event.data.keyId, org: event.data.org, role: event.data.role };
      case 'ApiKeyRevoked':
        return state.status === 'none' ? state : { ...state, status: 'revoked' };
      default:
        return assertNever(event);
    }
  },
};
