import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { issueApiKey } from '../../src/application/api-keys';
import { startTestGateway } from '../support/gateway';
import { describeWith, eventually, freePort } from '../support/infra';
import { startOrigins } from '../support/origins';

const hasRedisServer = spawnSync('sh', ['-c', 'command -v redis-server'], { stdio: 'ignore' }).status === 0;

/** A Redis of this test's own, on loopback, without persistence; stopped by its PID. */
async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  await eventually(
    () =>
      new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.end();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      }),
    10_000,
    'redis-server to listen',
  );
  return child;
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

describeWith('redis-server', hasRedisServer, 'rate limits in Redis when Redis goes away', () => {
  it('a Redis outage answers 503 {error} with Retry-After on both rate-limited registry paths (never 500, never a crash), and heals when Redis returns', async () => {
    const port = await freePort();
    let redis = await startRedis(port);
    const origins = await startOrigins({ 'pub.example': { '/.well-known/adagents.json': { body: { authorized_agents: [] } } } });
    const gw = await startTestGateway({ REDIS_URL: `redis://127.0.0.1:${port}`, REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    try {
      const admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, { now: new Date().toISOString() })).key;
      const resolve = () => fetch(`${gw.url}/api/brands/resolve/bulk`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ domains: ['acme.example'] }) });
      const revalidate = () => fetch(`${gw.url}/api/registry/publisher/pub.example/adagents/revalidate`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } });
      expect((await resolve()).status).toBe(200);

      await kill(redis);
      const started = Date.now();
      const down = await resolve();
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(Object.keys((await down.json()) as object)).toEqual(['error']);
      expect(Date.now() - started).toBeLessThan(10_000); // a prompt answer, not a hung request
      const refused = await revalidate();
      expect(refused.status).toBe(503);
      expect(typeof ((await refused.json()) as { error: unknown }).error).toBe('string'); // the registry's shape, spec §7
      expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);

      // Redis comes back (empty, as after a failover without persistence): both work again.
      redis = await startRedis(port);
      await eventually(async () => (await resolve()).status === 200, 20_000, 'bulk resolve after Redis returns');
      expect((await revalidate()).status).toBe(200);
      expect((await revalidate()).status).toBe(429); // the slot works as before: once per five minutes
    } finally {
      await gw.stop();
      await origins.close();
      await kill(redis);
    }
  }, 60_000);
});
