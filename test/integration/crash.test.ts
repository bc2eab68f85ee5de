import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { openEventStore, openReadModels } from '../../src/app';
import { loadConfig } from '../../src/config';
import { PG_ADMIN_URL, createTestDatabase, describeWith, eventually } from '../support/infra';
import { BIN, ROOT, graphql, spawnGateway, tempDir, type GatewayProcess } from '../support/gateway';

const run = promisify(execFile);
const ACKED_BEFORE_KILL = 1000;
const CONCURRENCY = 16;

/**
 * Acknowledged writes survive `kill -9`: issue keys over GraphQL from 16 concurrent clients, kill
 * the server without warning once 1,000 were acknowledged (more are in flight), restart it, and
 * check that every acknowledged key is in the log and every projection applied each event once.
 */
async function crashScenario(env: Record<string, string>): Promise<void> {
  const admin = (
    await run(process.execPath, [BIN, 'keys', 'create', '--org', 'ops', '--role', 'admin'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })
  ).stdout.trim();

  let gw: GatewayProcess = await spawnGateway(env);
  await eventually(async () => (await graphql(gw.url, '{ __typename }', undefined, admin)).status === 200, 20_000, 'admin key');

  const acked: string[] = [];
  let killed = false;
  const worker = async (w: number) => {
    for (let i = 0; !killed; i++) {
      try {
        const r = await graphql(gw.url, 'mutation($i: IssueApiKeyInput!) { issueApiKey(input: $i) { keyId } }', { i: { org: `w${w}-${i}` } }, admin);
        if (r.status === 200 && r.body.data) acked.push(r.body.data.issueApiKey.keyId);
      } catch {
        return; // connection reset by the kill
      }
      if (acked.length >= ACKED_BEFORE_KILL && !killed) {
        killed = true;
        gw.child.kill('SIGKILL');
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  await gw.stop();
  expect(acked.length).toBeGreaterThanOrEqual(ACKED_BEFORE_KILL);

  gw = await spawnGateway(env);
  try {
    await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 30_000, 'readyz after restart');
  } finally {
    await gw.stop();
  }

  const config = loadConfig({ ...env });
  const store = await openEventStore(config);
  const rm = await openReadModels(config);
  try {
    const log = await store.readAll({ limit: 100_000 });
    const issued = log.filter((e) => e.type === 'ApiKeyIssued').map((e) => (e.data as { keyId: string }).keyId);
    const stored = new Set(issued);
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);

    const head = await store.headPosition();
    for (const name of ['api-keys', 'event-stats']) expect((await rm.getCheckpoint(name)).position).toBe(head);
    // event-stats adds one per application: a double (or missed) application shows as a wrong count.
    const stats = await rm.query<{ type: string; count: number }>('SELECT type, count FROM event_type_stats');
    const logCounts: Record<string, number> = {};
    for (const e of log) logCounts[e.type] = (logCounts[e.type] ?? 0) + 1;
    expect(Object.fromEntries(stats.map((s) => [s.type, Number(s.count)]))).toEqual(logCounts);
    const keys = await rm.query<{ n: number }>('SELECT COUNT(*) AS n FROM api_keys');
    expect(Number(keys[0]!.n)).toBe(issued.length);
  } finally {
    await rm.close();
    await store.close();
  }
}

describe('kill -9 under load (SQLite, embedded default)', () => {
  it('keeps every acknowledged append and applies each event once', async () => {
    await crashScenario({ DATA_DIR: tempDir(), LOG_LEVEL: 'warn' });
  }, 180_000);
});

describeWith('PostgreSQL', !!PG_ADMIN_URL, 'kill -9 under load (PostgreSQL)', () => {
  it('keeps every acknowledged append and applies each event once', async () => {
    const db = await createTestDatabase();
    try {
      await crashScenario({ DATA_DIR: tempDir(), EVENT_STORE_URL: db.url, LOG_LEVEL: 'warn' });
    } finally {
      await db.drop();
    }
  }, 180_000);
});
