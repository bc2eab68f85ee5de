import type { AccountEvent, AccountTerms } from '../../src/domain/account/account';
import type { Projection } from '../../src/projections/projection';
import type { ReadModelStore } from '../../src/readmodel/port';

// Ids page in bytewise order on both engines (PostgreSQL's default collation would not).
const ddl = (collate: string) => [
  `CREATE TABLE IF NOT EXISTS accounts (
  owner TEXT NOT NULL, account_id TEXT${collate} NOT NULL, status TEXT NOT NULL, sandbox INTEGER NOT NULL,
  doc TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (owner, account_id))`,
];

/** A buyer's accounts on this seller, as list_accounts and account resolution read them. */
export const accounts: Projection = {
  name: 'accounts',
  version: 1,
  tables: ['accounts'],
  ddl: { sqlite: ddl(''), postgres: ddl(' COLLATE "C"') },
  handles: ['AccountSynced', 'AccountStatusChanged'],
  evolve(stored) {
    const e = stored as unknown as AccountEvent;
    switch (e.type) {
      case 'AccountSynced': {
        const { status, created: _c, at, ...terms } = e.data;
        return [
          {
            sql: `INSERT INTO accounts (owner, account_id, status, sandbox, doc, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                  ON CONFLICT (owner, account_id) DO UPDATE SET status = excluded.status, doc = excluded.doc, updated_at = excluded.updated_at`,
            params: [terms.owner, terms.account_id, status, terms.sandbox ? 1 : 0, JSON.stringify(terms), at, at],
          },
        ];
      }
      case 'AccountStatusChanged':
        return [{ sql: 'UPDATE accounts SET status = ?, updated_at = ? WHERE owner = ? AND account_id = ?', params: [e.data.status, e.data.at, e.data.owner, e.data.account_id] }];
      default:
        return [];
    }
  },
};

export interface AccountRow {
  account_id: string;
  status: string;
  terms: AccountTerms;
  created_at: string;
  updated_at: string;
}

type Raw = Omit<AccountRow, 'terms'> & { doc: string };
const row = (r: Raw): AccountRow => ({ account_id: r.account_id, status: r.status, terms: JSON.parse(r.doc) as AccountTerms, created_at: r.created_at, updated_at: r.updated_at });

export const accountQueries = {
  byId: async (rm: ReadModelStore, owner: string, accountId: string) =>
    (await rm.query<Raw>('SELECT account_id, status, doc, created_at, updated_at FROM accounts WHERE owner = ? AND account_id = ?', [owner, accountId])).map(row)[0],
  /** In id order, after `after`, at most `limit` (bytewise order on both engines). */
  list: async (rm: ReadModelStore, owner: string, f: { status?: string; sandbox?: boolean; after?: string; limit: number }) => {
    const where = ['owner = ?'];
    const params: unknown[] = [owner];
    if (f.status) {
      where.push('status = ?');
      params.push(f.status);
    }
    if (f.sandbox !== undefined) {
      where.push('sandbox = ?');
      params.push(f.sandbox ? 1 : 0);
    }
    if (f.after) {
      where.push('account_id > ?');
      params.push(f.after);
    }
    const rows = await rm.query<Raw>(`SELECT account_id, status, doc, created_at, updated_at FROM accounts WHERE ${where.join(' AND ')} ORDER BY account_id LIMIT ${Math.floor(f.limit)}`, params);
    return rows.map(row);
  },
};
