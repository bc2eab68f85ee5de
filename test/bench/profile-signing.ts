import crypto from 'node:crypto';
import { signWebhook } from '../../src/signing/webhook-signer';
import { MemoryReplayStore, verifyWebhook } from '../../src/signing/webhook-verifier';
import { printProfileSummary } from './cpu-profile';

/**
 * Where the signer's and verifier's time goes, for the webhook_signing / webhook_verification
 * rows: `node --cpu-prof --cpu-prof-dir=<dir> dist/test/bench/profile-signing.js sign|verify`
 * runs only our side, long enough for the sampler to see it, and then
 * `node dist/test/bench/profile-signing.js summary <file.cpuprofile>` prints the top self-time
 * functions (percent of the samples, with file:line).
 */
const url = 'https://buyer.example/webhooks/create_media_buy/agent_1/route';
const bodies = Array.from({ length: 5000 }, (_, i) =>
  JSON.stringify({ idempotency_key: `whk_bench_${i}_xxxxxxxxxx`, task_id: `task_${i}`, operation_id: 'op', task_type: 'create_media_buy', status: 'completed', timestamp: new Date().toISOString(), result: { media_buy_id: `mb_${i}` } }),
);

async function run(what: string, passes: number): Promise<void> {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ed25519');
  const key = { kid: 'bench', alg: 'ed25519' as const, privateKey };
  if (what === 'sign') {
    for (let p = 0; p < passes; p++) for (const body of bodies) signWebhook({ url, body }, key);
    return;
  }
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'bench', alg: 'EdDSA', use: 'sig', key_ops: ['verify'], adcp_use: 'webhook-signing' };
  const signed = bodies.map((body) => ({ body, headers: signWebhook({ url, body }, key).headers }));
  for (let p = 0; p < passes; p++) {
    const replay = new MemoryReplayStore();
    for (const s of signed) await verifyWebhook({ method: 'POST', url, headers: s.headers, body: s.body }, { resolveKey: async () => jwk as never, replay });
  }
}

const [what = 'verify', arg] = process.argv.slice(2);
if (what === 'summary') printProfileSummary(arg!, 'self');
else run(what, Number(arg ?? '6')).catch((err: unknown) => {
  process.stderr.write(String(err));
  process.exit(1);
});
