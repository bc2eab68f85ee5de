import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { signWebhook } from '../../src/signing/webhook-signer';
import { BIN, startTestGateway, tempDir } from '../support/gateway';
import { sdkVerifyWebhooks } from '../support/sdk-oracle';

const run = promisify(execFile);
const BODY = JSON.stringify({
  idempotency_key: 'whk_0123456789abcdef0123',
  operation_id: 'op_1',
  task_id: 'task_1',
  task_type: 'create_media_buy',
  status: 'completed',
  timestamp: new Date().toISOString(),
  result: { media_buy_id: 'mb_1' },
});
const URL_ = 'https://buyer.example.com/webhooks/create_media_buy/agent_1/op_1';

async function publishedJwks(url: string) {
  const brand = (await (await fetch(`${url}/.well-known/brand.json`)).json()) as { agents: { type: string; url: string; jwks_uri: string }[] };
  const agent = brand.agents.find((a) => a.type === 'sales')!;
  expect(agent.url).toBe(`${url}/mcp`);
  const res = await fetch(agent.jwks_uri);
  expect(res.headers.get('content-type')).toContain('application/jwk-set+json');
  return ((await res.json()) as { keys: Record<string, unknown>[] }).keys;
}

/** Verifies with the official SDK verifier (6.11.0) against the keys as published. */
async function sdkVerify(keys: Record<string, unknown>[], headers: Record<string, string>) {
  const [verdict] = await sdkVerifyWebhooks(keys, [{ method: 'POST', url: URL_, headers, body: BODY }]);
  return verdict;
}

describe('webhook signing keys: keystore, /.well-known discovery, @adcp/sdk interop', () => {
  it('first start creates a 0600 key file; the JWKS is verify-only; @adcp/sdk verifies what we sign (WEBHOOK_KEY_PURPOSE=webhook-signing)', async () => {
    const gw = await startTestGateway({ WEBHOOK_KEY_PURPOSE: 'webhook-signing' });
    try {
      const file = path.join(gw.dataDir, 'webhook-signing-keys.json');
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      const keys = await publishedJwks(gw.url);
      expect(keys).toHaveLength(1);
      expect(keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', key_ops: ['verify'], adcp_use: 'webhook-signing' });
      expect(keys[0]).not.toHaveProperty('d');
      const signed = signWebhook({ url: URL_, body: BODY }, gw.app.signingKeys.activeKey());
      expect(await sdkVerify(keys, signed.headers)).toMatchObject({ status: 'verified', keyid: keys[0]!.kid });
    } finally {
      await gw.stop();
    }
  });

  it('instances starting together on one data directory all sign with the one key file made first', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'webhook-signing-keys.json');
    const keystore = require.resolve('../../src/signing/keystore');
    const kids = await Promise.all(
      Array.from({ length: 6 }, async () =>
        (await run(process.execPath, ['-e', `const { SigningKeystore } = require(${JSON.stringify(keystore)}); process.stdout.write(new SigningKeystore({ file: ${JSON.stringify(file)} }, 'webhook-signing').activeKey().kid)`])).stdout,
      ),
    );
    const stored = (JSON.parse(fs.readFileSync(file, 'utf8')) as { keys: { kid: string }[] }).keys;
    expect(stored).toHaveLength(1);
    expect(new Set(kids)).toEqual(new Set([stored[0]!.kid]));
    expect(fs.readdirSync(dir)).toEqual(['webhook-signing-keys.json']); // no staging file left behind
  });

  it('publishes adcp_use request-signing by default (the spec); SDK 6.11 refuses that purpose, hence the setting', async () => {
    const gw = await startTestGateway();
    try {
      const keys = await publishedJwks(gw.url);
      expect(keys[0]).toMatchObject({ adcp_use: 'request-signing' });
      const signed = signWebhook({ url: URL_, body: BODY }, gw.app.signingKeys.activeKey());
      expect(await sdkVerify(keys, signed.headers)).toEqual({ status: 'rejected', code: 'webhook_mode_mismatch' });
    } finally {
      await gw.stop();
    }
  });

  it('`keys rotate` on a running gateway: the new key signs within a second, the old one stays published', async () => {
    const dataDir = tempDir();
    const gw = await startTestGateway({ DATA_DIR: dataDir, WEBHOOK_KEY_PURPOSE: 'webhook-signing' });
    try {
      const before = gw.app.signingKeys.activeKey().kid;
      const { stdout } = await run(process.execPath, [BIN, 'keys', 'rotate'], { env: { PATH: process.env.PATH, DATA_DIR: dataDir } });
      const rotated = stdout.trim();
      expect(rotated).not.toBe(before);
      const deadline = Date.now() + 5000;
      while (gw.app.signingKeys.activeKey().kid !== rotated && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(gw.app.signingKeys.activeKey().kid).toBe(rotated);
      const keys = await publishedJwks(gw.url);
      expect(keys.map((k) => k.kid).sort()).toEqual([before, rotated].sort());
      const signed = signWebhook({ url: URL_, body: BODY }, gw.app.signingKeys.activeKey());
      expect(await sdkVerify(keys, signed.headers)).toMatchObject({ status: 'verified', keyid: rotated });
    } finally {
      await gw.stop();
    }
  });

  it('WEBHOOK_SIGNING_KEYS (inline JWK set) is used as given and nothing is written', async () => {
    const dataDir = tempDir();
    const { generateKeyPairSync } = await import('node:crypto');
    const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
    const gw = await startTestGateway({ DATA_DIR: dataDir, WEBHOOK_KEY_PURPOSE: 'webhook-signing', WEBHOOK_SIGNING_KEYS: JSON.stringify({ keys: [{ ...jwk, kid: 'ops-es256' }] }) });
    try {
      expect(fs.existsSync(path.join(dataDir, 'webhook-signing-keys.json'))).toBe(false);
      const keys = await publishedJwks(gw.url);
      expect(keys).toEqual([expect.objectContaining({ kid: 'ops-es256', kty: 'EC', crv: 'P-256', alg: 'ES256' })]);
      const signed = signWebhook({ url: URL_, body: BODY }, gw.app.signingKeys.activeKey());
      expect(signed.headers['Signature-Input']).toContain('alg="ecdsa-p256-sha256"');
      expect(await sdkVerify(keys, signed.headers)).toMatchObject({ status: 'verified', keyid: 'ops-es256' });
    } finally {
      await gw.stop();
    }
  });
});
