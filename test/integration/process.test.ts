import http from 'node:http';
import { allProjections } from '../../projections';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { BIN, ROOT, graphql, spawnGateway, tempDir } from '../support/gateway';
import { eventually } from '../support/infra';

const run = promisify(execFile);

/** Runs the CLI; resolves with its exit code and output instead of throwing on a non-zero exit. */
async function cli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('adcp-gateway as a process', () => {
  it('starts on embedded defaults in a fresh DATA_DIR and answers /healthz and {__typename} within 30 s', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const started = Date.now();
    const gw = await spawnGateway({ DATA_DIR: dataDir }, 30_000);
    try {
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
      expect((await graphql(gw.url, '{ __typename }')).body.data).toEqual({ __typename: 'Query' });
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(fs.existsSync(path.join(dataDir, 'adcp.sqlite'))).toBe(true);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
    // Graceful shutdown logs its last word.
    expect(gw.stderr()).toContain('adcp-gateway stopped');
  });

  it.each([
    [{ PORT: 'eighty' }, /^adcp-gateway: invalid configuration: PORT: .*\n$/],
    [{ EVENT_STORE_URL: 'mysql://x' }, /^adcp-gateway: invalid configuration: EVENT_STORE_URL: must start with sqlite:.*\n$/],
    [{ KAFKA_BROKERS: 'not a broker' }, /^adcp-gateway: invalid configuration: KAFKA_BROKERS: must be host:port.*\n$/],
    [{ LOG_LEVEL: 'loud' }, /^adcp-gateway: invalid configuration: LOG_LEVEL: .*\n$/],
  ])('refuses bad configuration %j with one line and exit 1', async (env, message) => {
    const r = await cli(['serve'], { DATA_DIR: tempDir(), ...env });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
  });

  it.each([
    [['keys', 'create', '--org'], 2, /^adcp-gateway: Option '--org <value>' argument missing\n$/],
    [['keys', 'list', '--bogus'], 2, /^adcp-gateway: Unknown option '--bogus'/],
    [['serve', '--port', '9'], 2, /^adcp-gateway: serve takes no arguments \(got --port 9\); it is configured by environment variables/],
    [['bench', 'nosuch'], 2, /^adcp-gateway: bench: nothing matches "nosuch"; names: append, create_media_buy/],
    [['bench', '--quick'], 2, /^adcp-gateway: usage: adcp-gateway bench \[name\]/],
    [['nope'], 2, /^adcp-gateway: unknown command "nope"/],
  ])('answers CLI misuse %j with a usage line, exit %i, no stack', async (args, code, message) => {
    const r = await cli(args, { DATA_DIR: tempDir() });
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code, stderr: expect.stringMatching(message) });
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('a port already taken is one line and exit 1, not a stack', async () => {
    const taken = http.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    try {
      const port = (taken.address() as { port: number }).port;
      const r = await cli(['serve'], { DATA_DIR: tempDir(), PORT: String(port) });
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 1, stderr: `adcp-gateway: cannot listen on 127.0.0.1:${port} (EADDRINUSE); set PORT or HOST\n` });
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it('keys create prints one sk_ key; keys list shows it without the secret', async () => {
    const env = { DATA_DIR: tempDir() };
    const created = await cli(['keys', 'create', '--org', 'ops', '--role', 'admin'], env);
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^sk_[\w-]{8}_[\w-]{32}$/);
    const listed = await cli(['keys', 'list'], env);
    expect(listed.code).toBe(0);
    const rows = listed.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, string>);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ org: 'ops', role: 'admin', revoked_at: null });
    expect(listed.stdout).not.toContain(key.slice(12));
    const bad = await cli(['keys', 'create', '--org', 'ops', '--role', 'root'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--role must be one of buyer, seller, admin');
  });

  it('projections rebuild replays every read model and reports events/s', async () => {
    const env = { DATA_DIR: tempDir() };
    for (let i = 0; i < 3; i++) expect((await cli(['keys', 'create', '--org', `o${i}`], env)).code).toBe(0);
    const r = await cli(['projections', 'rebuild'], env);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { projection: string; events: number; events_per_second: number });
    expect(lines.map((l) => l.projection).sort()).toEqual(allProjections.map((p) => p.name).sort());
    // Three keys (only `serve` publishes the catalog).
    for (const l of lines) expect(l.events).toBe(3);
    const status = await cli(['projections', 'status'], env);
    // The rebuild leaves a ProjectionsRebuilt marker in the log (for running servers' caches), and steps past it.
    for (const line of status.stdout.trim().split('\n')) expect(JSON.parse(line)).toMatchObject({ head: 4, lag: 0 });
  });

  it('a rebuild repairs read models under a running server, and the server serves the repaired rows (its caches are dropped)', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const key = (await cli(['keys', 'create', '--org', 'acme', '--role', 'buyer'], { DATA_DIR: dataDir })).stdout.trim();
    const gw = await spawnGateway({ DATA_DIR: dataDir, APPROVAL_POLICY: 'never' }, 30_000);
    try {
      const call = async (name: string, body: unknown) =>
        (await (await fetch(`${gw.url}/api/tasks/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) })).json()) as Record<string, any>;
      const created = await call('create_media_buy', {
        buyer_ref: 'repair-me',
        brand_manifest: { url: 'https://acme.example' },
        packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
        start_time: { type: 'asap' },
        end_time: new Date(Date.now() + 7 * 86_400_000).toISOString(),
      });
      const status = async () => (await call('get_media_buys', { media_buy_id: created.media_buy_id })).media_buys[0].status;
      // A damaged row (what a rebuild is for), read once so the server caches it.
      const Database = (await import('better-sqlite3')).default;
      const db = new Database(path.join(dataDir, 'adcp.sqlite'));
      db.pragma('busy_timeout = 10000');
      db.prepare("UPDATE media_buys SET status = 'damaged' WHERE media_buy_id = ?").run(created.media_buy_id);
      db.close();
      expect(await status()).toBe('damaged');
      const rebuilt = await cli(['projections', 'rebuild', 'media-buys'], { DATA_DIR: dataDir });
      expect(rebuilt.code).toBe(0);
      expect(await eventually(async () => (await status()) === 'active', 10_000, 'the repaired row served')).toBe(true);
    } finally {
      expect(await gw.stop()).toBe(0);
    }
  }, 90_000);

  it('another process holding the SQLite write lock past the busy timeout: a command answers 503 with Retry-After, nothing is written, and the same command succeeds once the lock is free', async () => {
    const dataDir = path.join(tempDir(), 'data');
    const created = await cli(['keys', 'create', '--org', 'acme', '--role', 'buyer'], { DATA_DIR: dataDir });
    const key = created.stdout.trim();
    const gw = await spawnGateway({ DATA_DIR: dataDir, APPROVAL_POLICY: 'never' }, 30_000);
    // The holder takes the write lock and keeps it until told to let go (stdin closes).
    const holder = spawn(process.execPath, ['-e', `
      const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
      const db = new Database(${JSON.stringify(path.join(dataDir, 'adcp.sqlite'))});
      db.pragma('busy_timeout = 20000');
      db.exec('BEGIN IMMEDIATE');
      process.stdout.write('locked\\n');
      process.stdin.resume();
      process.stdin.on('end', () => { db.exec('COMMIT'); db.close(); process.exit(0); });`], { stdio: ['pipe', 'pipe', 'inherit'] });
    const body = JSON.stringify({
      buyer_ref: 'while-locked',
      brand_manifest: { url: 'https://acme.example' },
      packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
      start_time: { type: 'asap' },
      end_time: new Date(Date.now() + 7 * 86_400_000).toISOString(),
    });
    const create = () => fetch(`${gw.url}/api/tasks/create_media_buy`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body });
    try {
      await new Promise<void>((resolve, reject) => {
        holder.stdout!.on('data', (d: Buffer) => d.toString().includes('locked') && resolve());
        holder.once('exit', (code) => reject(new Error(`lock holder exited with ${code}`)));
      });
      const refused = await create();
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('30');
      expect(((await refused.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('retry shortly') });
      const released = new Promise((r) => holder.once('exit', r));
      holder.stdin!.end();
      await released;
      const ok = await create();
      expect(ok.status).toBe(200); // not a 409: the refused attempt left no buyer_ref behind
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
    } finally {
      if (holder.exitCode === null) holder.kill('SIGKILL');
      expect(await gw.stop()).toBe(0);
    }
  }, 120_000);

  it('keeps schema/schema.graphql in step with the code (run `npm run schema` after changing types)', async () => {
    const r = await cli(['schema', '--check'], {});
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});
