import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { eventually } from '../support/infra';
import { mcpCall } from '../support/mcp-call';
import { startReceiver } from '../support/receiver';
import { BIN, ROOT, graphql, spawnGateway, tempDir, type GatewayProcess } from '../support/gateway';

const run = promisify(execFile);
const cli = (args: string[], env: Record<string, string>) =>
  run(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', LOG_LEVEL: 'silent', ...env }, timeout: 120_000 });
const ready = (gw: GatewayProcess) => eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 60_000, 'readyz');
const ACCOUNT = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };

/**
 * A buy over the approval threshold with a webhook, approved by the seller: its task's completion
 * is POSTed to `<receiver>/tasks/<name>`. Resolves with the task id once the receiver has it.
 */
async function approvedBuyWithWebhook(url: string, buyer: string, seller: string, receiver: Awaited<ReturnType<typeof startReceiver>>, name: string): Promise<string> {
  const call = async (tool: string, args: Record<string, unknown>) => {
    const answer = await mcpCall(url, buyer, tool, { idempotency_key: randomUUID(), ...args }, { validate: false });
    if (answer.isError) throw new Error(`${tool}: ${JSON.stringify(answer.body)}`);
    return answer.body as Record<string, any>;
  };
  await call('sync_accounts', { accounts: [{ ...ACCOUNT, billing: 'operator', payment_terms: 'net_30' }] });
  const created = await call('create_media_buy', {
    account: ACCOUNT,
    brand: { domain: 'acme-outdoor.com' },
    start_time: 'asap',
    end_time: new Date(Date.now() + 20 * 86_400_000).toISOString(),
    packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 90_000 }],
    push_notification_config: { url: `${receiver.origin}/tasks/${name}` },
  });
  expect(created.status).toBe('submitted');
  const approved = await graphql(url, 'mutation($t: ID!) { approveTask(taskId: $t) }', { t: created.task_id }, seller);
  expect(approved.body.errors).toBeUndefined();
  await eventually(() => receiver.received.some((w) => w.path === `/tasks/${name}`), 30_000, `the ${name} task's webhook`);
  return created.task_id as string;
}

/** Every scheduled webhook attempted: nothing is left pending when the gateway stops. */
const allAttempted = (url: string) =>
  eventually(async () => {
    const types = (await graphql<{ eventLog: { eventTypes: { type: string; count: number }[] } }>(url, '{ eventLog { eventTypes { type count } } }')).body.data!.eventLog.eventTypes;
    const count = (type: string) => types.find((t) => t.type === type)?.count ?? 0;
    return count('WebhookScheduled') > 0 && count('WebhookAttempted') >= count('WebhookScheduled');
  }, 30_000, 'every scheduled webhook attempted');

describe('a moved log does not make its side effects again', () => {
  const source = tempDir('adcp-move-src-');
  const target = tempDir('adcp-move-dst-');
  const env = { ALLOW_PRIVATE_WEBHOOK_URLS: '1' };
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    for (const dir of [source, target]) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('SQLite → SQLite import: the old task gets no second webhook on the target, a new task gets its own', async () => {
    const onSource = { ...env, DATA_DIR: source };
    const gw = await spawnGateway(onSource, 60_000);
    let seller = '';
    let buyer = '';
    try {
      await ready(gw);
      seller = (await cli(['keys', 'create', '--org', 'move-seller', '--role', 'seller'], onSource)).stdout.trim();
      buyer = (await cli(['keys', 'create', '--org', 'move-buyer', '--role', 'buyer'], onSource)).stdout.trim();
      await eventually(async () => (await fetch(`${gw.url}/api/tasks/get_products`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${buyer}` }, body: '{"brief":"news"}' })).status === 200, 20_000, 'buyer key');
      await approvedBuyWithWebhook(gw.url, buyer, seller, receiver, 'old');
      await allAttempted(gw.url);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
    const oldDeliveries = receiver.received.filter((w) => w.path === '/tasks/old').length;
    expect(oldDeliveries).toBeGreaterThan(0);

    const file = path.join(source, 'log.ndjson');
    const exported = JSON.parse((await cli(['log', 'export', '--to', file], onSource)).stdout).exported;
    const { stdout, stderr } = await cli(['log', 'import', file, '--to', `sqlite:${path.join(target, 'adcp.sqlite')}`], onSource);
    const imported = JSON.parse(stdout);
    expect(imported.imported).toEqual(exported);
    const head = exported.events as number; // SQLite keeps positions: the head is the event count
    expect(imported.side_effects_done_up_to).toBe(head);
    expect(stderr).toContain(`recorded as done up to position ${head}`);

    const onTarget = { ...env, DATA_DIR: target };
    const gw2 = await spawnGateway(onTarget, 60_000);
    try {
      await ready(gw2);
      // Every side-effect consumer (whichever groups there are) starts at the mark, not at 0.
      const db = new Database(path.join(target, 'adcp.sqlite'), { readonly: true });
      try {
        const groups = db.prepare("SELECT name, position FROM checkpoints WHERE name LIKE 'bus:%'").all() as { name: string; position: number }[];
        expect(groups.length).toBeGreaterThan(3);
        expect(groups.filter((g) => g.position < head)).toEqual([]);
      } finally {
        db.close();
      }

      // Once every consumer has caught up, none has tried to redo an old effect: the dispatcher
      // meeting the old task's completion again would try to schedule its webhook again (refused
      // as a conflict on its delivery stream, or, racing the rebuild, sent twice).
      const metric = (text: string, name: string) => [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))].map((m) => Number(m[1]));
      const scraped = await eventually(async () => {
        const text = await (await fetch(`${gw2.url}/metrics`)).text();
        const lags = metric(text, 'adcp_consumer_lag_events');
        return lags.length > 3 && lags.every((n) => n === 0) ? text : undefined;
      }, 30_000, 'every consumer caught up');
      expect(metric(scraped!, 'adcp_appends_total\\{outcome="conflict"\\}').reduce((a, n) => a + n, 0)).toBe(0);
      expect(metric(scraped!, 'adcp_appended_events_total')).toEqual([0]); // the start appends nothing
      expect((await graphql<{ eventLog: { headPosition: number } }>(gw2.url, '{ eventLog { headPosition } }')).body.data!.eventLog.headPosition).toBe(head);

      await approvedBuyWithWebhook(gw2.url, buyer, seller, receiver, 'new');
      await allAttempted(gw2.url);
      // The consumers handle events in log order: by the time the new task's webhook went out, an
      // old one handled again would have been scheduled, and its delivery is given time to show.
      await new Promise((r) => setTimeout(r, 1500));
      expect(receiver.received.filter((w) => w.path === '/tasks/old')).toHaveLength(oldDeliveries);
      const db2 = new Database(path.join(target, 'adcp.sqlite'), { readonly: true });
      try {
        const tasksScheduled = (where: string) =>
          new Set((db2.prepare(`SELECT data FROM events WHERE type = 'WebhookScheduled' AND ${where}`).all(head) as { data: string }[]).map((e) => (JSON.parse(e.data) as { task_id: string }).task_id));
        const before = tasksScheduled('position <= ?');
        const after = tasksScheduled('position > ?');
        expect(before.size).toBe(1); // the old task's
        expect(after.size).toBe(1); // the new task's, and not the old one's again
        expect([...after].filter((t) => before.has(t))).toEqual([]);
      } finally {
        db2.close();
      }
    } finally {
      expect(await gw2.stop()).toBe(0);
    }
  }, 240_000);

  it('--read-models names where the mark goes; an invalid one refuses before anything is written', async () => {
    const file = path.join(source, 'log.ndjson'); // the previous test's export
    const elsewhere = path.join(target, 'second');
    const store = `sqlite:${path.join(elsewhere, 'events.sqlite')}`;
    await expect(cli(['log', 'import', file, '--to', store, '--read-models', 'mysql://x'], { DATA_DIR: elsewhere })).rejects.toMatchObject({
      code: 1,
      stderr: expect.stringContaining('READ_MODEL_URL: must start with sqlite: or postgres://'),
    });
    expect(fs.existsSync(path.join(elsewhere, 'events.sqlite'))).toBe(false);

    const readModels = path.join(elsewhere, 'read-models.sqlite');
    const imported = JSON.parse((await cli(['log', 'import', file, '--to', store, '--read-models', `sqlite:${readModels}`], { DATA_DIR: elsewhere })).stdout);
    const mark = (file: string) => {
      const db = new Database(file, { readonly: true });
      try {
        if (!db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'checkpoints'").get()) return undefined;
        return (db.prepare("SELECT position FROM checkpoints WHERE name = 'side-effects-done'").get() as { position: number } | undefined)?.position;
      } finally {
        db.close();
      }
    };
    expect(mark(readModels)).toBe(imported.imported.events);
    expect(imported.side_effects_done_up_to).toBe(imported.imported.events);
    expect(mark(path.join(elsewhere, 'events.sqlite'))).toBeUndefined(); // not beside the events: the named store has it
  }, 60_000);
});
