import { INSTANCE_ID } from '../shared/instance-id';
import type { ReadModelStore } from './port';

const DDL = [
  `CREATE TABLE IF NOT EXISTS leases (
     name       TEXT PRIMARY KEY,
     holder     TEXT NOT NULL,
     expires_at BIGINT NOT NULL
   )`,
];

/**
 * Named leases in the shared database, for work that exactly one instance may do at a time (the
 * Kafka relay of a topic): the holder renews before its lease runs out; when it dies, the lease
 * expires and another instance takes it over. A claim is one atomic upsert that succeeds only for
 * the holder or once the lease has expired, so two instances never both hold one.
 *
 * Expiry is judged by each instance's clock (epoch ms): a skew between instances shortens or
 * lengthens a hand-over by that much, which NTP keeps to milliseconds against leases of seconds.
 */
export class Leases {
  private constructor(
    private readonly db: ReadModelStore,
    /** Who this instance is, as a lease holder. */
    readonly holder: string,
  ) {}

  /** `holder` defaults to this process; tests pass their own to play several instances. */
  static async open(db: ReadModelStore, holder = INSTANCE_ID): Promise<Leases> {
    await db.migrate(DDL);
    return new Leases(db, holder);
  }

  /** Takes or renews the lease for `ttlMs` from `now`; true when this instance holds it. */
  async claim(name: string, ttlMs: number, now = Date.now()): Promise<boolean> {
    const rows = await this.db.query<{ holder: string }>(
      `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
       WHERE leases.holder = excluded.holder OR leases.expires_at < ?
       RETURNING holder`,
      [name, this.holder, now + ttlMs, now],
    );
    return rows.length === 1 && rows[0]!.holder === this.holder;
  }

  /** Gives the lease up at once (at shutdown), so another instance need not wait for it to expire. */
  async release(name: string): Promise<void> {
    await this.db.execute('DELETE FROM leases WHERE name = ? AND holder = ?', [name, this.holder]);
  }

  /** The current holder and expiry, if any (for status and tests). */
  async holderOf(name: string): Promise<{ holder: string; expiresAt: number } | undefined> {
    const [row] = await this.db.query<{ holder: string; expires_at: number | string }>('SELECT holder, expires_at FROM leases WHERE name = ?', [name]);
    return row ? { holder: row.holder, expiresAt: Number(row.expires_at) } : undefined;
  }
}

export interface LeasedWork {
  /** Starts the work; called each time this instance takes the lease. */
  start(): Promise<void>;
  /** Stops it; called when the lease is lost or at shutdown. */
  stop(): Promise<void>;
}

/**
 * Keeps trying to hold lease `name` and runs `work` while it does: renews every third of `ttlMs`,
 * stops the work as soon as a renewal fails (another instance may take over once the lease
 * expires, `ttlMs` after the last renewal), and releases it at `close`.
 */
export class LeaseKeeper {
  private timer?: NodeJS.Timeout;
  private running = false;
  private closed = false;
  private turn: Promise<void> = Promise.resolve();

  constructor(
    private readonly leases: Leases,
    private readonly name: string,
    private readonly work: LeasedWork,
    private readonly options: { ttlMs: number; onError: (err: unknown) => void },
  ) {}

  /** Makes the first claim (and starts the work if it holds), then keeps the lease in the background. */
  async start(): Promise<void> {
    await this.tick();
  }

  /** Whether this instance runs the work now. */
  get held(): boolean {
    return this.running;
  }

  private tick(): Promise<void> {
    this.turn = this.turn.then(async () => {
      if (this.closed) return;
      let holds = false;
      try {
        holds = await this.leases.claim(this.name, this.options.ttlMs);
      } catch (err) {
        // Cannot tell: stop, since another instance may take the lease once it expires.
        this.options.onError(err);
      }
      try {
        if (holds && !this.running) {
          this.running = true;
          await this.work.start();
        } else if (!holds && this.running) {
          this.running = false;
          await this.work.stop();
        }
      } catch (err) {
        this.options.onError(err);
      }
      if (!this.closed) {
        this.timer = setTimeout(() => void this.tick(), Math.max(50, Math.floor(this.options.ttlMs / 3)));
        this.timer.unref();
      }
    });
    return this.turn;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.turn;
    if (this.running) {
      this.running = false;
      await this.work.stop();
    }
    await this.leases.release(this.name).catch((err: unknown) => this.options.onError(err));
  }
}
