import type { ApiKeyEvent } from '../../src/domain/api-key/api-key';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

const DDL = `CREATE TABLE IF NOT EXISTS api_keys (
  key_id     TEXT PRIMARY KEY,
  org        TEXT NOT NULL,
  role       TEXT NOT NULL,
  prefix     TEXT NOT NULL,
  salt       TEXT NOT NULL,
  hash       TEXT NOT NULL,
  issued_at  TEXT NOT NULL,
  revoked_at TEXT
)`;

/** The credentials the Bearer middleware checks: salted hashes, looked up by prefix. */
export const apiKeys: Projection = {
  name: 'api-keys',
  version: 1,
  tables: ['api_keys'],
  ddl: {
    sqlite: [DDL, 'CREATE INDEX IF NOT EXISTS api_keys_prefix ON api_keys (prefix)'],
    postgres: [DDL, 'CREATE INDEX IF NOT EXISTS api_keys_prefix ON api_keys (prefix)'],
  },
  handles: ['ApiKeyIssued', 'ApiKeyRevoked'],
  evolve(stored) {
    const e = stored as unknown as ApiKeyEvent;
    switch (e.type) {
      case 'ApiKeyIssued': {
        const d = e.data;
        return [
          {
            sql: `INSERT INTO api_keys (key_id, org, role, prefix, salt, hash, issued_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                  ON CONFLICT (key_id) DO NOTHING`,
            params: [d.keyId, d.org, d.role, d.prefix, d.salt, d.hash, d.issuedAt],
          },
        ];
      }
      case 'ApiKeyRevoked':
        return [{ sql: 'UPDATE api_keys SET revoked_at = ? WHERE key_id = ?', params: [e.data.revokedAt, e.data.keyId] }];
    }
  },
};

export interface ApiKeyRow {
  key_id: string;
  org: string;
  role: string;
  prefix: string;
  salt: string;
  hash: string;
  issued_at: string;
  revoked_at: string | null;
}

export const apiKeyQueries = {
  byPrefix: (rm: ReadModelStore, prefix: string) =>
    rm.query<ApiKeyRow>('SELECT * FROM api_keys WHERE prefix = ? AND revoked_at IS NULL', [prefix]),
  /** Whether a key exists and is not revoked. */
  active: async (rm: ReadModelStore, keyId: string) => (await rm.query<{ key_id: string }>('SELECT key_id FROM api_keys WHERE key_id = ? AND revoked_at IS NULL', [keyId])).length > 0,
  list: (rm: ReadModelStore) =>
    rm.query<ApiKeyRow>('SELECT * FROM api_keys ORDER BY issued_at, key_id'),
};
