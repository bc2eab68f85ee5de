import { AppError } from '../../shared/errors';
import type { Role } from '../api-key/api-key';
import { assertNever, type Decider } from '../decider';

/** Who a grant speaks for: the API key the user signed in with at the embedded authorization server. */
export interface GrantSubject {
  readonly keyId: string;
  readonly org: string;
  readonly role: Role;
}

/**
 * What an authorization code or a refresh token stands for. Stored under a hash of the token
 * (the stream id), never the token itself.
 */
export interface Grant {
  readonly kind: 'authorization_code' | 'refresh_token';
  readonly clientId: string;
  readonly subject: GrantSubject;
  readonly scopes: readonly string[];
  readonly resource?: string;
  /** Codes only: the PKCE S256 challenge and the redirect_uri the code was sent to. */
  readonly codeChallenge?: string;
  readonly redirectUri?: string;
  /** Every refresh token descended from one code shares a family; reuse revokes the family. */
  readonly family: string;
  readonly expiresAt: string;
}

export type GrantEvent =
  | { readonly type: 'OAuthGrantIssued'; readonly data: Grant & { readonly issuedAt: string } }
  | { readonly type: 'OAuthGrantUsed'; readonly data: { readonly usedAt: string } };

export type GrantCommand = { readonly type: 'IssueGrant'; readonly grant: Grant; readonly now: string } | { readonly type: 'UseGrant'; readonly now: string };

export type GrantState = { readonly status: 'none' } | { readonly status: 'issued' | 'used'; readonly grant: Grant };

/** One-time credentials: a code, or a refresh token (rotated on every use). */
export const grantDecider: Decider<GrantCommand, GrantEvent, GrantState> = {
  initialState: () => ({ status: 'none' }),

  decide(command, state) {
    switch (command.type) {
      case 'IssueGrant':
        if (state.status !== 'none') throw new AppError('CONFLICT', 'grant already issued');
        return [{ type: 'OAuthGrantIssued', data: { ...command.grant, issuedAt: command.now } }];
      case 'UseGrant':
        if (state.status === 'none') throw new AppError('NOT_FOUND', 'unknown grant');
        if (state.status === 'used') throw new AppError('INVALID_STATE', `${state.grant.kind} already used`);
        if (Date.parse(state.grant.expiresAt) <= Date.parse(command.now)) throw new AppError('INVALID_STATE', `${state.grant.kind} expired`);
        return [{ type: 'OAuthGrantUsed', data: { usedAt: command.now } }];
      default:
        return assertNever(command);
    }
  },

  evolve(state, event) {
    switch (event.type) {
      case 'OAuthGrantIssued': {
        const { issuedAt: _issuedAt, ...grant } = event.data;
        return { status: 'issued', grant };
      }
      case 'OAuthGrantUsed':
        return state.status === 'none' ? state : { ...state, status: 'used' };
      default:
        return assertNever(event);
    }
  },
};

/** Registered clients (RFC 7591). A confidential client's secret is kept only as a salted hash. */
export interface RegisteredClient {
  readonly clientId: string;
  /** The registration response's metadata, minus the secret. */
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly secret?: { readonly salt: string; readonly hash: string; readonly expiresAt?: number };
  readonly issuedAt: number;
}

export type OAuthClientEvent = { readonly type: 'OAuthClientRegistered'; readonly data: RegisteredClient };
export type OAuthFamilyEvent = { readonly type: 'OAuthTokenFamilyRevoked'; readonly data: { readonly family: string; readonly reason: string; readonly at: string } };

export const oauthClientStream = (clientId: string) => `oauth-client-${clientId}`;
/** `tokenHash` is the SHA-256 of the token, base64url: the stream name never holds a usable token. */
export const oauthGrantStream = (tokenHash: string) => `oauth-grant-${tokenHash}`;
export const oauthFamilyStream = (family: string) => `oauth-family-${family}`;
