import type { ReadModelStore } from '../../readmodel/port';
import type { ReplayStore } from '../../signing/webhook-verifier';

/** Live nonces are counted per scope in slots of this many seconds of their expiry. */
const SLOT_SECONDS = 10;
/** The most expired nonces one sweep deletes: a sweep is never a long stall, and one that filled up is followed by another. */
const SWEEP_ROWS = 5000;

const slotOf = (column: string) => `((${column} + ${SLOT_SECONDS - 1}) / ${SLOT_SECONDS}) * ${SLOT_SECONDS}`;

/**
 * `webhook_nonces.keyid` holds the scope (`webhook:<endpoint>:<kid>`, `request:<kid>`; named
 * before nonces were scoped). Each insert counts itself into `webhook_nonce_counts` under its
 * scope and the end of its expiry's slot, in the insert's own statement (a trigger): the live
 * count is a sum over the slots not yet ended (at most ~40 rows, whatever the scope holds) and
 * can never drift from the nonces, since nothing but the expiry ever takes a count back.
 */
const COMMON_DDL = [
  'CREATE TABLE IF NOT EXISTS webhook_nonces (keyid TEXT NOT NULL, nonce TEXT NOT NULL, expires_at BIGINT NOT NULL, PRIMARY KEY (keyid, nonce))',
  // The sweep's index; the per-keyid one served the COUNT(*) the slots replace.
  'CREATE INDEX IF NOT EXISTS webhook_nonces_expires ON webhook_nonces (expires_at)',
  'DROP INDEX IF EXISTS webhook_nonces_expiry',
  'CREATE TABLE IF NOT EXISTS webhook_nonce_counts (keyid TEXT NOT NULL, slot BIGINT NOT NULL, live BIGINT NOT NULL, PRIMARY KEY (keyid, slot))',
  'CREATE INDEX IF NOT EXISTS webhook_nonce_counts_slot ON webhook_nonce_counts (slot)',
];
const COUNT_ON_INSERT = `INSERT INTO webhook_nonce_counts (keyid, slot, live) VALUES (NEW.keyid, ${slotOf('NEW.expires_at')}, 1) ON CONFLICT (keyid, slot) DO UPDATE SET live = webhook_nonce_counts.live + 1`;
const DDL = {
  sqlite: [...COMMON_DDL, `CREATE TRIGGER IF NOT EXISTS webhook_nonces_counted AFTER INSERT ON webhook_nonces BEGIN ${COUNT_ON_INSERT}; END`],
  postgres: [
    ...COMMON_DDL,
    `CREATE OR REPLACE FUNCTION webhook_nonces_counted() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${COUNT_ON_INSERT}; RETURN NULL; END $$`,
    'CREATE OR REPLACE TRIGGER webhook_nonces_counted AFTER INSERT ON webhook_nonces FOR EACH ROW EXECUTE FUNCTION webhook_nonces_counted()',
  ],
};

/**
 * The replay cache in the gateway's database, so every instance and endpoint of the receiver
 * shares it and it survives a restart inside the signatures' validity window. The insert is the
 * atomic claim: two instances racing on one nonce cannot both win. A scope's live count is read
 * from its slot counters (see the DDL), never by counting its nonces, and errs towards the cap by
 * at most one slot: a nonce counts until the end of the 10 s in which it expires.
 */
export class DatabaseReplayStore implements ReplayStore {
  private sweptAt = 0;
  private behind = false;

  private constructor(private readonly db: ReadModelStore) {}

  static async open(db: ReadModelStore): Promise<DatabaseReplayStore> {
    await db.migrate(DDL[db.dialect]);
    return new DatabaseReplayStore(db);
  }

  async count(scope: string, now: number): Promise<number> {
    const [row] = await this.db.query<{ n: number | string | null }>('SELECT SUM(live) AS n FROM webhook_nonce_counts WHERE keyid = ? AND slot > ?', [scope, now]);
    return Number(row?.n ?? 0);
  }

  async has(scope: string, nonce: string, now: number): Promise<boolean> {
    return (await this.db.query('SELECT 1 FROM webhook_nonces WHERE keyid = ? AND nonce = ? AND expires_at > ?', [scope, nonce, now])).length > 0;
  }

  async insert(scope: string, nonce: string, expiresAt: number, now: number): Promise<boolean> {
    if (this.behind || now - this.sweptAt >= SLOT_SECONDS) await this.sweep(now);
    return (await this.db.execute('INSERT INTO webhook_nonces (keyid, nonce, expires_at) VALUES (?, ?, ?) ON CONFLICT (keyid, nonce) DO NOTHING', [scope, nonce, expiresAt])) === 1;
  }

  /** Space back from the expired: counts never depend on it (a slot that ended is not summed). */
  private async sweep(now: number): Promise<void> {
    this.sweptAt = now;
    const deleted = await this.db.execute(`DELETE FROM webhook_nonces WHERE (keyid, nonce) IN (SELECT keyid, nonce FROM webhook_nonces WHERE expires_at <= ? LIMIT ${SWEEP_ROWS})`, [now]);
    this.behind = deleted >= SWEEP_ROWS;
    await this.db.execute('DELETE FROM webhook_nonce_counts WHERE slot <= ?', [now]);
  }
}
