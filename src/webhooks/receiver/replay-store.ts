import type { ReadModelStore } from '../../readmodel/port';
import type { ReplayStore } from '../../signing/webhook-verifier';

const DDL = [
  'CREATE TABLE IF NOT EXISTS webhook_nonces (keyid TEXT NOT NULL, nonce TEXT NOT NULL, expires_at BIGINT NOT NULL, PRIMARY KEY (keyid, nonce))',
  'CREATE INDEX IF NOT EXISTS webhook_nonces_expiry ON webhook_nonces (keyid, expires_at)',
];

/**
 * The (keyid, nonce) replay cache in the gateway's database, so every instance and endpoint of
 * the receiver shares it and it survives a restart inside the signatures' validity window. The
 * insert is the atomic claim: two instances racing on one nonce cannot both win.
 */
export class DatabaseReplayStore implements ReplayStore {
  private swept = 0;

  private constructor(private readonly db: ReadModelStore) {}

  static async open(db: ReadModelStore): Promise<DatabaseReplayStore> {
    await db.migrate(DDL);
    return new DatabaseReplayStore(db);
  }

  async count(keyid: string, now: number): Promise<number> {
    const [row] = await this.db.query<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_nonces WHERE keyid = ? AND expires_at > ?', [keyid, now]);
    return Number(row?.n ?? 0);
  }

  async has(keyid: string, nonce: string, now: number): Promise<boolean> {
    return (await this.db.query('SELECT 1 FROM webhook_nonces WHERE keyid = ? AND nonce = ? AND expires_at > ?', [keyid, nonce, now])).length > 0;
  }

  async insert(keyid: string, nonce: string, expiresAt: number, now: number): Promise<boolean> {
    if (now - this.swept >= 60) {
      this.swept = now;
      await this.db.execute('DELETE FROM webhook_nonces WHERE expires_at <= ?', [now]);
    }
    return (await this.db.execute('INSERT INTO webhook_nonces (keyid, nonce, expires_at) VALUES (?, ?, ?) ON CONFLICT (keyid, nonce) DO NOTHING', [keyid, nonce, expiresAt])) === 1;
  }
}
