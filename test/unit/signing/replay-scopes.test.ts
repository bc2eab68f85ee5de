import { generateKeyPairSync } from 'node:crypto';
import { MemoryReplayStore } from '../../../src/signing/signature-verifier';
import { signWebhook } from '../../../src/signing/webhook-signer';
import { spendWebhookNonce, verifyWebhook, type VerifierOptions } from '../../../src/signing/webhook-verifier';

const URL = 'https://buyer.example/webhooks/create_media_buy/agent/route';
const body = '{"idempotency_key":"whk_aaaaaaaaaaaaaaaa","status":"completed"}';

/** A sender's key published under `kid`. */
function senderKey(kid: string) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', key_ops: ['verify'], adcp_use: 'webhook-signing' };
  return { sign: (nonce?: string) => signWebhook({ url: URL, body }, { kid, alg: 'ed25519', privateKey }, nonce ? { nonce } : {}).headers, jwk };
}

describe('replay scopes, deferred nonces and the memory store', () => {
  it('two senders publishing one kid, each in its scope, share neither nonces nor a cap', async () => {
    const [a, b] = [senderKey('same-kid'), senderKey('same-kid')];
    const replay = new MemoryReplayStore();
    const as = (sender: typeof a, scope: string): VerifierOptions => ({ resolveKey: async () => sender.jwk as never, replay, replayScope: scope, perKeyidCap: 2 });
    const verify = (sender: typeof a, scope: string, nonce?: string) => verifyWebhook({ method: 'POST', url: URL, headers: sender.sign(nonce), body }, as(sender, scope)).then(() => 'ok', (err: { code: string }) => err.code);
    expect(await verify(b, 'webhook:B:', 'nonce-0000000000000001')).toBe('ok');
    expect(await verify(a, 'webhook:A:', 'nonce-0000000000000001')).toBe('ok');
    expect(await verify(b, 'webhook:B:', 'nonce-0000000000000001')).toBe('webhook_signature_replayed');
    expect(await verify(b, 'webhook:B:')).toBe('ok');
    expect(await verify(b, 'webhook:B:')).toBe('webhook_signature_rate_abuse');
    expect(await verify(a, 'webhook:A:')).toBe('ok');
  });

  it('with deferNonce a verified request leaves its nonce unspent until spendWebhookNonce, which refuses a second spend', async () => {
    const sender = senderKey('k');
    const replay = new MemoryReplayStore();
    const options: VerifierOptions = { resolveKey: async () => sender.jwk as never, replay, replayScope: 'webhook:E:', deferNonce: true };
    const headers = sender.sign('nonce-deferred-000000001');
    const first = await verifyWebhook({ method: 'POST', url: URL, headers, body }, options);
    expect(first.parsedBody).toEqual({ value: JSON.parse(body) });
    // Refused by the caller (say, its envelope): nothing spent, the same request verifies again.
    const second = await verifyWebhook({ method: 'POST', url: URL, headers, body }, options);
    expect(await replay.count('webhook:E:k', Math.floor(Date.now() / 1000))).toBe(0);
    await spendWebhookNonce(second, options);
    expect(await replay.count('webhook:E:k', Math.floor(Date.now() / 1000))).toBe(1);
    await expect(spendWebhookNonce(first, options)).rejects.toMatchObject({ code: 'webhook_signature_replayed' });
  });

  it('the memory store counts live nonces exactly, drops each second as it passes, and frees an expired nonce', () => {
    const store = new MemoryReplayStore();
    for (let i = 0; i < 1000; i++) expect(store.insertNow('s', `n${i}`, 100 + (i % 10), 50)).toBe(true);
    expect(store.insertNow('s', 'n0', 200, 50)).toBe(false);
    expect(store.countNow('s', 50)).toBe(1000);
    expect(store.countNow('s', 104)).toBe(500);
    expect(store.countNow('s', 109)).toBe(0);
    expect(store.countNow('other', 50)).toBe(0);
    expect(store.insertNow('s', 'n0', 300, 200)).toBe(true);
    expect(store.countNow('s', 200)).toBe(1);
  });
});
