import { execFile, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { BIN, ROOT, graphql, spawnGateway, tempDir, type GatewayProcess } from '../support/gateway';
import { expectPrompt, sampleHealthz, spawnControl } from '../support/limits';
import { startOrigins } from '../support/origins';
import { testSender } from '../support/senders';

const run = promisify(execFile);

/**
 * Four hostile senders in a process of their own (so this process's clock measures the
 * gateway), each sending one of issue 33's receiver probes in a loop for `ms`: answers the
 * statuses they got.
 *
 * - `content-type` (finding 2): a Signature-Input covering content-type, and a Content-Type of
 *   15,000 commas and a quote, which the single-value check read from every comma to the end;
 * - `duplicate-keys` (finding 4): a 1 MB `["a","a",…]`, validly signed (a fresh nonce each time),
 *   whose duplicate-key check searched ahead for a colon from every string;
 * - `bad-signature` (finding 5): a signature that does not verify under the sender's real kid,
 *   which holds 99,999 live nonces at that endpoint (one short of the cap, so every request
 *   reaches the crypto): each one was counted before it.
 */
const HOSTILE_SENDERS = `
const [url, mode, ms, signer, jwk] = process.argv.slice(1);
const { createPrivateKey } = require('node:crypto');
const { signWebhook } = require(signer);
const key = { kid: JSON.parse(jwk).kid, alg: 'ed25519', privateKey: createPrivateKey({ key: JSON.parse(jwk), format: 'jwk' }) };
const small = JSON.stringify({ idempotency_key: 'whk_hostile_0000000001', task_id: 't', task_type: 'create_media_buy', status: 'completed', timestamp: new Date().toISOString() });
const big = Buffer.from('[' + Array(262000).fill('"a"').join(',') + ']');
const request = () => {
  if (mode === 'duplicate-keys') return { headers: signWebhook({ url, body: big }, key).headers, body: big };
  const headers = signWebhook({ url, body: small }, key).headers;
  headers.Signature = 'sig1=:' + 'A'.repeat(86) + ':';
  if (mode === 'content-type') headers['Content-Type'] = 'application/json;x=' + ','.repeat(15000) + '"';
  return { headers, body: small };
};
const until = Date.now() + Number(ms);
const statuses = [];
const loop = async () => {
  while (Date.now() < until) {
    const { headers, body } = request();
    const res = await fetch(url, { method: 'POST', headers, body }).catch(() => ({ status: 0, arrayBuffer: async () => {} }));
    statuses.push(res.status);
    await res.arrayBuffer();
  }
};
Promise.all([loop(), loop(), loop(), loop()]).then(() => process.stdout.write(JSON.stringify(statuses)));
`;

describe('webhook receiver: four hostile senders do not stall the gateway', () => {
  let gw: GatewayProcess;
  let control: { url: string; child: ChildProcess };
  let origins: Awaited<ReturnType<typeof startOrigins>>;
  const sender = testSender('hostile.example', 'hostile_agent', 'hostile-kid');
  /** Two endpoints for the sender: its key holds no nonces at the first, 99,999 at the second. */
  const urls = { quiet: '', busy: '' };

  beforeAll(async () => {
    origins = await startOrigins({ [sender.domain]: sender.docs });
    const dataDir = tempDir();
    // The documented limits but the receiver's own rate, left out of reach (ROOMY_LIMITS): what is
    // measured here is the work each request costs, not the budget that would refuse most of them
    // (tested in webhook-receiver-scopes.test.ts; four senders may have four addresses).
    const env = { DATA_DIR: dataDir, REGISTRY_ORIGIN_OVERRIDES: origins.overrides, REQUESTS_PER_MINUTE: 'anonymous=300,buyer=3000,seller=3000,admin=6000', GRAPHQL_POINTS_PER_MINUTE: 'anonymous=5000,buyer=50000,seller=50000,admin=100000', AUTH_FAILURES_PER_MINUTE: '30' };
    const buyer = (await run(process.execPath, [BIN, 'keys', 'create', '--org', 'buyer', '--role', 'buyer'], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })).stdout.trim();
    gw = await spawnGateway(env);
    const register = async () => {
      const r = await graphql(gw.url, `mutation { registerWebhookEndpoint(agentId: "${sender.agentId}", senderDomain: "${sender.domain}") }`, undefined, buyer);
      const endpoint = r.body.data!.registerWebhookEndpoint as { endpoint_id: string; url_template: string };
      return { id: endpoint.endpoint_id, url: endpoint.url_template.replace('{task_type}', 'create_media_buy') };
    };
    urls.quiet = (await register()).url;
    const busy = await register();
    urls.busy = busy.url;
    // At the busy endpoint the sender's key holds 99,999 live nonces, as after that many webhooks
    // accepted in its window (written beside the running gateway: SQLite in WAL mode).
    const db = new Database(path.join(dataDir, 'adcp.sqlite'));
    const now = Math.floor(Date.now() / 1000);
    const insert = db.prepare('INSERT INTO webhook_nonces (keyid, nonce, expires_at) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 99_999; i++) insert.run(`webhook:${busy.id}:${sender.kid}`, `prefill-${i}`, now + 300 + (i % 60));
    })();
    db.close();
    control = await spawnControl(120_000);
  }, 120_000);

  afterAll(async () => {
    control?.child.kill();
    await gw?.stop();
    await origins?.close();
  });

  it.each([
    ['content-type', 401],
    ['duplicate-keys', 400],
    ['bad-signature', 401],
  ] as const)('%s: each refused (%i), and /healthz stays prompt while four senders send it in a loop for 10 s', async (mode, refusal) => {
    const jwk = JSON.stringify({ ...sender.privateKey.export({ format: 'jwk' }), kid: sender.kid });
    const signer = path.join(ROOT, 'dist', 'src', 'signing', 'webhook-signer.js');
    const url = mode === 'bad-signature' ? urls.busy : urls.quiet;
    const attack = run(process.execPath, ['-e', HOSTILE_SENDERS, url, mode, '10000', signer, jwk], { maxBuffer: 64 * 1024 * 1024 }).then(({ stdout }) => JSON.parse(stdout) as number[]);
    const until = Date.now() + 10_000;
    const { excess, bare } = await sampleHealthz(gw.url, control.url, () => Date.now() < until);
    const statuses = await attack;
    expect(statuses.length).toBeGreaterThan(40);
    expect(statuses.filter((s) => s !== refusal)).toEqual([]);
    expect(excess.length).toBeGreaterThan(50);
    expectPrompt(`/healthz beside ${mode} senders (round trip beyond the bare server's)`, excess, bare);
  }, 60_000);
});
