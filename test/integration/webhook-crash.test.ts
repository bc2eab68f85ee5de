import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { openEventStore } from '../../src/app';
import { loadConfig } from '../../src/config';
import { eventually } from '../support/infra';
import { BIN, ROOT, graphql, spawnGateway, tempDir, type GatewayProcess } from '../support/gateway';
import { startReceiver } from '../support/receiver';

const run = promisify(execFile);
const BUYS = 5;

/**
 * `kill -9` while webhooks are being retried: the receiver answers 503 until the gateway is
 * killed with every fire at least twice attempted, then 200. After a restart each status change
 * is delivered under its one idempotency_key, and each key is POSTed at most once more than the
 * attempts the log recorded (the attempt in flight at the kill: at-least-once, never lost).
 */
describe('kill -9 during webhook retries (SQLite)', () => {
  it('resumes every delivery after restart: none lost, no status change fired twice', async () => {
    let failing = true;
    const receiver = await startReceiver(() => (failing ? 503 : 200));
    const env = { DATA_DIR: tempDir(), LOG_LEVEL: 'warn', APPROVAL_POLICY: 'manual', ALLOW_PRIVATE_WEBHOOK_URLS: '1' };
    const cli = async (...args: string[]) => (await run(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })).stdout.trim();
    const buyer = await cli('keys', 'create', '--org', 'acme', '--role', 'buyer');
    const seller = await cli('keys', 'create', '--org', 'pub', '--role', 'seller');
    let gw: GatewayProcess = await spawnGateway(env);
    try {
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
      const taskIds: string[] = [];
      for (let i = 0; i < BUYS; i++) {
        const res = await fetch(`${gw.url}/api/tasks/create_media_buy`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` },
          body: JSON.stringify({
            buyer_ref: `crash-${i}`,
            brand_manifest: { url: 'https://acme.example' },
            packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 500 }],
            start_time: { type: 'asap' },
            end_time: new Date(Date.now() + 7 * 86_400_000).toISOString(),
            push_notification_config: { url: `${receiver.origin}/hooks/${i}`, operation_id: `op-crash-${i}` },
          }),
        });
        const body = (await res.json()) as { task_id: string };
        taskIds.push(body.task_id);
        const ok = await graphql(gw.url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: body.task_id }, seller);
        expect(ok.body.data).toEqual({ approveTask: 'completed' });
      }
      const keysOf = () => new Set(receiver.received.map((w) => w.json.idempotency_key as string));
      const postsOf = (key: string) => receiver.received.filter((w) => w.json.idempotency_key === key).length;
      // Working + completed for each buy, each attempted at least twice (all answered 503).
      await eventually(() => keysOf().size === BUYS * 2 && [...keysOf()].every((k) => postsOf(k) >= 2), 30_000, 'two attempts of every fire');
      gw.child.kill('SIGKILL');
      await gw.stop();
      failing = false;

      gw = await spawnGateway(env);
      await eventually(() => [...keysOf()].every((k) => receiver.received.some((w) => w.json.idempotency_key === k && w.answered === 200)), 30_000, 'every fire delivered after restart');
      await gw.stop();

      const fires = new Map<string, Set<string>>();
      for (const w of receiver.received) {
        const id = `${w.json.task_id}/${w.json.status}`;
        fires.set(id, (fires.get(id) ?? new Set()).add(w.json.idempotency_key));
      }
      expect([...fires.keys()].sort()).toEqual(taskIds.flatMap((t) => [`${t}/completed`, `${t}/working`]).sort());
      for (const keys of fires.values()) expect(keys.size).toBe(1);

      const store = await openEventStore(loadConfig(env));
      try {
        const attempts = (await store.readAll({ limit: 100_000 })).filter((e) => e.type === 'WebhookAttempted').map((e) => e.data as { idempotency_key: string; status: string });
        for (const key of keysOf()) {
          const recorded = attempts.filter((a) => a.idempotency_key === key);
          expect(recorded.at(-1)?.status).toBe('success');
          expect(postsOf(key)).toBeGreaterThanOrEqual(recorded.length);
          expect(postsOf(key)).toBeLessThanOrEqual(recorded.length + 1);
        }
      } finally {
        await store.close();
      }
    } finally {
      await gw.stop();
      await receiver.close();
    }
  }, 120_000);
});
