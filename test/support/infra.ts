import { randomBytes } from 'node:crypto';
import net from 'node:net';
import pg from 'pg';

/**
 * Test infrastructure switches. `npm test` (scripts/run-tests.js) probes PostgreSQL and Redis and
 * starts Kafka, then passes TEST_PG_URL, TEST_REDIS_URL and KAFKA_BROKERS. A suite whose engine is missing is skipped,
 * unless REQUIRE_INFRA=1 (CI), where it fails with the reason instead.
 */
export const REQUIRE_INFRA = process.env.REQUIRE_INFRA === '1';
export const PG_ADMIN_URL = process.env.TEST_PG_URL;
export const KAFKA_BROKERS = process.env.KAFKA_BROKERS;
export const KURRENTDB_URL = process.env.KURRENTDB_URL;
export const REDIS_URL = process.env.TEST_REDIS_URL;

/** `describe` when the engine is configured; otherwise a skip, or a failing test under REQUIRE_INFRA. */
export function describeWith(engine: string, available: boolean, name: string, fn: () => void): void {
  if (available) return describe(name, fn);
  if (REQUIRE_INFRA) {
    return describe(name, () => {
      it(`needs ${engine}`, () => {
        throw new Error(`${engine} is required (REQUIRE_INFRA=1) but not configured for tests`);
      });
    });
  }
  return describe.skip(`${name} (no ${engine})`, fn);
}

/** Creates a fresh database and returns its URL and a drop function. */
export async function createTestDatabase(prefix = 'adcp_test'): Promise<{ url: string; drop: () => Promise<void> }> {
  if (!PG_ADMIN_URL) throw new Error('TEST_PG_URL is not set');
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** Polls `check` until it returns a truthy value or the deadline passes (no sleeps in tests). */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A loopback port nothing listens on right now (for a server a test starts, stops and restarts). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as net.AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}
