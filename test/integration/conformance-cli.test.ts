import { execFile } from 'node:child_process';
import net from 'node:net';
import { BIN, ROOT, spawnGateway, tempDir, type GatewayProcess } from '../support/gateway';

/**
 * `adcp-gateway conformance`, run as a user runs it beside a gateway (the real bin, the same
 * DATA_DIR): the official runner over MCP and over A2A, each storyboard as a fresh buyer whose
 * key the command issues in that store; and the ways it fails, each with a non-zero exit and a
 * message that says what is wrong.
 */
function conformance(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, 'conformance', ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

type Run = Awaited<ReturnType<typeof conformance>>;

describe('adcp-gateway conformance', () => {
  const dataDir = tempDir();
  let gw: GatewayProcess;
  // idempotency waits 30 s for duplicate webhooks on either transport: both runs start at once.
  let mcp: Promise<Run>;
  let a2a: Promise<Run>;

  beforeAll(async () => {
    // The runner's webhook receiver is on loopback.
    gw = await spawnGateway({ DATA_DIR: dataDir, ALLOW_PRIVATE_WEBHOOK_URLS: '1', SANDBOX_APPROVAL_DELAY_MS: '500' });
    mcp = conformance(['--url', gw.url, '--storyboards', 'capability_discovery,idempotency', '--protocol', 'mcp'], { DATA_DIR: dataDir });
    a2a = conformance(['--url', gw.url, '--storyboards', 'capability_discovery,idempotency', '--protocol', 'a2a', '--json'], { DATA_DIR: dataDir });
  });
  afterAll(async () => {
    await gw?.stop();
  });

  it('a storyboard id the bundled tree does not have: exit 2, named, nothing run', async () => {
    const run = await conformance(['--url', gw.url, '--storyboards', 'capability_discovery,no_such_storyboard'], { DATA_DIR: dataDir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no storyboard "no_such_storyboard" in the bundled compliance tree');
    expect(run.stdout).toBe('');
  }, 30_000);

  it('a gateway URL that refuses: exit 1, says it cannot reach it', async () => {
    // A port that was free a moment ago: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const run = await conformance(['--url', `http://127.0.0.1:${port}`, '--storyboards', 'capability_discovery'], { DATA_DIR: dataDir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`cannot reach the gateway at http://127.0.0.1:${port} (ECONNREFUSED)`);
  }, 30_000);

  it('a gateway on another store: exit 1, says the gateway did not read the issued key', async () => {
    const run = await conformance(['--url', gw.url, '--storyboards', 'capability_discovery'], { DATA_DIR: tempDir() });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/(has not read|does not know) the buyer key issued in DATA_DIR /);
  }, 30_000);
  it('over MCP: a line per storyboard and the summary, exit 0', async () => {
    const run = await mcp;
    expect({ code: run.code, stderr: run.stderr, stdout: run.code === 0 ? '' : run.stdout }).toEqual({ code: 0, stderr: '', stdout: '' });
    expect(run.stdout).toMatch(/^PASSED +capability_discovery +\d+ passed, 0 failed, \d+ skipped$/m);
    expect(run.stdout).toMatch(/^PASSED +idempotency +\d+ passed, 0 failed, \d+ skipped$/m);
    expect(run.stdout).toMatch(/^2 storyboards: 2 passed, 0 failed, 0 skipped$/m);
  }, 125_000);

  it('over A2A, --json: the same storyboards pass, the result as JSON', async () => {
    const run = await a2a;
    expect({ code: run.code, stderr: run.code === 0 ? '' : run.stderr }).toEqual({ code: 0, stderr: '' });
    const result = JSON.parse(run.stdout) as { agent_url: string; buyer: string; summary: unknown; storyboards: { storyboard: string; status: string; failed: number }[] };
    expect(result).toMatchObject({ agent_url: gw.url, buyer: 'fresh', summary: { storyboards: 2, passed: 2, failed: 0, skipped: 0 } });
    expect(result.storyboards.map((s) => [s.storyboard, s.status, s.failed])).toEqual([
      ['capability_discovery', 'passed', 0],
      ['idempotency', 'passed', 0],
    ]);
    expect(run.stderr).toMatch(/^2 storyboards: 2 passed, 0 failed, 0 skipped$/m);
  }, 125_000);

});
