import crypto from 'node:crypto';
import fs from 'node:fs';
import { signWebhook } from '../../src/signing/webhook-signer';
import { MemoryReplayStore, verifyWebhook } from '../../src/signing/webhook-verifier';

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

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

function summary(file: string, top: number): void {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  for (const id of profile.samples) {
    const { functionName, url: where, lineNumber } = byId.get(id)!.callFrame;
    const name = `${functionName || '(anonymous)'} ${where ? `${where.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${lineNumber + 1}` : ''}`.trim();
    self.set(name, (self.get(name) ?? 0) + 1);
  }
  const total = profile.samples.length;
  for (const [name, count] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((100 * count) / total).toFixed(1).padStart(5)}%  ${name}\n`);
  }
}

const [what = 'verify', arg] = process.argv.slice(2);
if (what === 'summary') summary(arg!, 20);
else run(what, Number(arg ?? '6')).catch((err: unknown) => {
  process.stderr.write(String(err));
  process.exit(1);
});
