import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { SqliteEventStore } from '../../src/eventstore/sqlite';
import { loadTenantSecret, tenantKeyer } from '../../src/public-events/tenants';
import { BIN, ROOT, tempDir } from '../support/gateway';
import { eventually } from '../support/infra';

const run = promisify(execFile);
const AT = '2026-11-27T07:00:00.000Z';

async function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const lines = (stdout: string) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, any>);

/** Issue 37 item 4's compatibility check: a published event schema changes only with its version. */
describe('adcp-gateway schema --check on the public event schemas', () => {
  const copy = () => {
    const dir = tempDir('adcp-schema-');
    fs.cpSync(path.join(ROOT, 'schema'), dir, { recursive: true });
    return dir;
  };
  const edit = (dir: string, name: string, change: (schema: Record<string, any>) => void) => {
    const file = path.join(dir, 'events', name);
    const schema = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, any>;
    change(schema);
    fs.writeFileSync(file, JSON.stringify(schema, null, 2) + '\n');
  };

  it('passes on the committed documents', async () => {
    expect(await cli(['schema', '--check', '--dir', copy()], {})).toMatchObject({ code: 0, stderr: '' });
  }, 60_000);

  it('fails, naming the change, when a published schema differs from the code in a breaking way; a reworded description is only stale', async () => {
    // The published v1 had a field the code no longer produces: the code removed it without a v2.
    const removed = copy();
    edit(removed, 'task.status_changed.v1.json', (s) => {
      s.properties.priority = { type: 'string' };
    });
    const r = await cli(['schema', '--check', '--dir', removed], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('breaking change to a published event schema');
    expect(r.stderr).toContain('schema/events/task.status_changed.v1.json: priority: removed');
    // Writing refuses it too: the published file stays as it was.
    expect(await cli(['schema', '--dir', removed], {})).toMatchObject({ code: 2 });
    expect(JSON.parse(fs.readFileSync(path.join(removed, 'events', 'task.status_changed.v1.json'), 'utf8')).properties.priority).toEqual({ type: 'string' });

    const reworded = copy();
    edit(reworded, 'task.status_changed.v1.json', (s) => {
      s.description = 'Reworded.';
    });
    const stale = await cli(['schema', '--check', '--dir', reworded], {});
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain('schema/events/task.status_changed.v1.json stale');
    expect(stale.stderr).not.toContain('breaking');
  }, 120_000);
});

/** `adcp-gateway events tail` (issue 37 item 5): the public stream from the log, filtered, resumable, validated. */
describe('adcp-gateway events tail', () => {
  const dir = tempDir();
  const env = { DATA_DIR: dir, LOG_LEVEL: 'silent' };
  let store: SqliteEventStore;
  beforeAll(async () => {
    store = new SqliteEventStore({ file: path.join(dir, 'adcp.sqlite') });
    const meta = { metadata: { time: AT } };
    await store.append('api-key-k1', [{ type: 'ApiKeyIssued', data: { keyId: 'k1', org: 'acme', salt: 'pepper', hash: 'deadbeef' }, ...meta }], { expectedVersion: 'any' });
    // Each stream's first event names its owner, as the log's always do: the later ones are attributed by it.
    const terms = { media_buy_id: 'mb_1', owner: 'acme', buyer_ref: 'r1', start_time: AT, end_time: AT, currency: 'USD', total_budget: 100, packages: [] };
    await store.append('media-buy-mb_1', [{ type: 'MediaBuyCreated', data: { ...terms, status: 'active', at: AT }, ...meta }], { expectedVersion: 'any' });
    await store.append('task-t1', [{ type: 'TaskSubmitted', data: { task_id: 't1', task_type: 'create_media_buy', owner: 'acme', resource_id: 'mb_1', message: 'waiting', at: AT }, ...meta }], { expectedVersion: 'any' });
    await store.append('media-buy-mb_1', [{ type: 'MediaBuyStatusChanged', data: { media_buy_id: 'mb_1', from: 'active', status: 'paused', at: AT }, ...meta }], { expectedVersion: 'any' });
    await store.append('task-t1', [{ type: 'TaskStatusChanged', data: { task_id: 't1', from: 'submitted', status: 'completed', message: 'done', actor: 'seller', at: AT }, ...meta }], { expectedVersion: 'any' });
    await store.append('media-buy-mb_1', [{ type: 'MediaBuyStatusChanged', data: { media_buy_id: 'mb_1', from: 'paused', status: 'active', at: AT }, ...meta }], { expectedVersion: 'any' });
  });
  afterAll(async () => {
    await store.close();
  });

  it('prints every public event as a CloudEvents JSON line, never a credential type', async () => {
    const r = await cli(['events', 'tail'], env);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const out = lines(r.stdout);
    // The tenant key is the HMAC under the secret the first run created beside the log.
    const t = tenantKeyer(loadTenantSecret(path.join(dir, 'public-events-tenant-secret')))('acme');
    expect(out.map((e) => [e.type, e.tenant, e.subject])).toEqual([
      ['media_buy.created.v1', t, `${t}/mb_1`],
      ['task.status_changed.v1', t, `${t}/t1`],
      ['media_buy.status_changed.v1', t, `${t}/mb_1`],
      ['task.status_changed.v1', t, `${t}/t1`],
      ['media_buy.status_changed.v1', t, `${t}/mb_1`],
    ]);
    expect(out[2]).toMatchObject({ specversion: '1.0', source: '/adcp-gateway', time: AT, datacontenttype: 'application/json', data: { status: 'paused', previous_status: 'active' } });
    expect(r.stdout).not.toMatch(/pepper|deadbeef|ApiKey|acme/);
  });

  it('filters by --type (name, versioned name or domain) and resumes --from a position', async () => {
    const byDomain = lines((await cli(['events', 'tail', '--type', 'media_buy'], env)).stdout);
    expect(byDomain.map((e) => e.data.status)).toEqual(['active', 'paused', 'active']);
    expect(lines((await cli(['events', 'tail', '--type', 'task.status_changed.v1'], env)).stdout).map((e) => e.data.status)).toEqual(['submitted', 'completed']);
    const resumed = lines((await cli(['events', 'tail', '--type', 'media_buy.status_changed', '--from', String(byDomain[1]!.position + 1)], env)).stdout);
    expect(resumed.map((e) => e.data.status)).toEqual(['active']);
  });

  it('refuses an unknown type or a bad position with a usage error (exit 2)', async () => {
    expect(await cli(['events', 'tail', '--type', 'api_key.issued'], env)).toMatchObject({ code: 2, stdout: '', stderr: expect.stringContaining('unknown type "api_key.issued"') });
    expect(await cli(['events', 'tail', '--from', 'latest'], env)).toMatchObject({ code: 2, stderr: expect.stringContaining('--from must be a log position') });
    expect(await cli(['events', 'list'], env)).toMatchObject({ code: 2 });
  });

  it('--follow prints events appended after it started, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [BIN, 'events', 'tail', '--follow', '--type', 'creative'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await store.append('creative-x', [{ type: 'CreativeStatusChanged', data: { creative_id: 'cr_9', owner: 'acme', from: 'approved', status: 'suspended', reason: 'review', at: AT }, metadata: { time: AT } }], { expectedVersion: 'any' });
    await eventually(() => out.includes('"cr_9"'), 15_000, 'the followed event');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(lines(out).map((e) => [e.type, e.data.status])).toEqual([['creative.status_changed.v1', 'suspended']]);
  });

  it('reports an event that does not match its public schema instead of printing it, and exits 1', async () => {
    const bad = tempDir();
    const s = new SqliteEventStore({ file: path.join(bad, 'adcp.sqlite') });
    await s.append('delivery-mb_2', [{ type: 'DeliveryDelayed', data: { media_buy_id: 'mb_2', owner: 'acme', expected_availability: 'tomorrow', reason: 'late', at: AT }, metadata: { time: AT } }], { expectedVersion: 'any' });
    await s.close();
    const r = await cli(['events', 'tail'], { DATA_DIR: bad, LOG_LEVEL: 'silent' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/media_buy\.delivery_delayed\.v1 does not match its schema: expected_availability/);
  });
});
