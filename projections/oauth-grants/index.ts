import type { OAuthFamilyEvent } from '../../src/domain/oauth/grants';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const DDL = `CREATE TABLE IF NOT EXISTS oauth_revoked_grants (
  family     TEXT PRIMARY KEY,
  reason     TEXT NOT NULL,
  revoked_at TEXT NOT NULL
)`;

/**
 * The embedded authorization server's revoked grants (a code or refresh token reused, a refresh
 * token revoked, the API key behind it revoked): what the token check asks of an access token's
 * `sid`, so an access token ends with its grant instead of running to its expiry.
 */
export const oauthRevokedGrants: Projection = {
  name: 'oauth-revoked-grants',
  version: 1,
  tables: ['oauth_revoked_grants'],
  ddl: { sqlite: [DDL], postgres: [DDL] },
  handles: ['OAuthTokenFamilyRevoked'],
  evolve(stored) {
    const e = stored as unknown as OAuthFamilyEvent;
    return [
      {
        sql: 'INSERT INTO oauth_revoked_grants (family, reason, revoked_at) VALUES (?, ?, ?) ON CONFLICT (family) DO NOTHING',
        params: [e.data.family, e.data.reason, e.data.at],
      },
    ];
  },
};

export const oauthGrantQueries = {
  /** Whether the grant family was revoked. */
  revoked: async (rm: ReadModelStore, family: string) => (await rm.query<{ family: string }>('SELECT family FROM oauth_revoked_grants WHERE family = ?', [family])).length > 0,
};
