import { generateKeyPairSync } from 'node:crypto';
import { verifyRequestSignature } from '../../../src/signing/request-verifier';
import { hasSeveralValues, MemoryReplayStore } from '../../../src/signing/signature-verifier';
import { duplicateKeys, memberCount } from '../../../src/signing/strict-json';
import { signWebhook } from '../../../src/signing/webhook-signer';
import { verifyWebhook } from '../../../src/signing/webhook-verifier';

/** The fastest of `runs` timings of `f`, in ms (one pass is at the machine's mercy). */
async function bestMs(f: () => unknown, runs = 3): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    const t = process.hrtime.bigint();
    await f();
    best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e6);
  }
  return best;
}

/**
 * Holds `run` (over an input of `n` characters) under `boundMs`, the fastest of five tries. The
 * bounds sit well above what these checks take here (a few ms; a busy CI machine once took 24) and
 * below what they guard against: the lookahead regex hasSeveralValues replaced took ~180 ms over
 * 15,000 characters, and a check quadratic in a 16 KB header makes some 10^8 steps.
 * (A growth ratio against a quarter of the input was tried: sub-millisecond timings are too noisy.)
 */
async function expectLinear(run: (n: number) => unknown, n: number, boundMs: number): Promise<void> {
  expect(await bestMs(() => run(n), 5)).toBeLessThan(boundMs);
}

/** The check hasSeveralValues replaced: a comma with an even number of quotes after it. */
const lookahead = (value: string) => /,(?=(?:[^"]*"[^"]*")*[^"]*$)/.test(value);

const URL = 'https://buyer.example/webhooks/create_media_buy/agent_1/route';
const INPUT = 'sig1=("@method" "@target-uri" "@authority" "content-type" "content-digest");created=1776520800;expires=1776521100;nonce="n";keyid="k";alg="ed25519";tag="adcp/webhook-signing/v1"';

/**
 * Header values a sender picks, of about `n` characters each, aimed at whatever runs before a key
 * is looked up: every one of them is refused (or reaches the key lookup) in time linear in `n`.
 */
const HOSTILE_HEADERS: Record<string, (n: number) => Record<string, string>> = {
  'Content-Type: commas, then one quote': (n) => ({ 'content-type': `${','.repeat(n)}"` }),
  'Content-Type: a",a",…': (n) => ({ 'content-type': 'a",'.repeat(n / 3) }),
  'Content-Type: commas': (n) => ({ 'content-type': `application/json${','.repeat(n)}` }),
  'Signature-Input: many members': (n) => ({ 'signature-input': `${'a=1,'.repeat(n / 4)}${INPUT}` }),
  'Signature-Input: many components': (n) => ({ 'signature-input': `sig1=(${'"a" '.repeat(n / 4)}"b");created=1` }),
  'Signature-Input: many parameters, a dangling ;': (n) => ({ 'signature-input': `sig1=(${'"a" '.repeat(n / 8)}"b")${';a=1'.repeat(n / 8)};` }),
  'Signature-Input: an unclosed string': (n) => ({ 'signature-input': `sig1=("${'a'.repeat(n)}` }),
  'Signature-Input: (,(,(,…': (n) => ({ 'signature-input': '(,'.repeat(n / 2) }),
  'Signature: commas': (n) => ({ signature: ','.repeat(n) }),
  'Signature: many members': (n) => ({ signature: `${'a=:AA:,'.repeat(n / 7)}sig1=:AA:` }),
  'Content-Digest: commas': (n) => ({ 'content-digest': ','.repeat(n) }),
  'Content-Digest: many members': (n) => ({ 'content-digest': `${'a=:AA:,'.repeat(n / 7)}sha-256=:AA:` }),
  'Content-Digest: ((((…,': (n) => ({ 'content-digest': `${'('.repeat(n)},` }),
};

describe('what runs before a key is looked up is linear in its input', () => {
  it('hasSeveralValues answers as the lookahead regex did, on every short string of , " ; a', () => {
    const alphabet = [',', '"', ';', 'a'];
    for (let len = 0; len <= 7; len++) {
      for (let k = 0; k < alphabet.length ** len; k++) {
        let s = '';
        for (let i = 0, x = k; i < len; i++, x = Math.floor(x / alphabet.length)) s += alphabet[x % alphabet.length];
        if (hasSeveralValues(s) !== lookahead(s)) throw new Error(`differs on ${JSON.stringify(s)}`);
      }
    }
    expect(hasSeveralValues('application/json')).toBe(false);
    expect(hasSeveralValues('application/json, text/plain')).toBe(true);
    expect(hasSeveralValues('text/plain; a="x,y"')).toBe(false);
  });

  it('hasSeveralValues: 15,000 commas and a quote in well under a millisecond each, held under 20 ms (the lookahead regex: ~180 ms)', async () => {
    const value = `${','.repeat(15_000)}"`;
    expect(hasSeveralValues(value)).toBe(false);
    await expectLinear((n) => hasSeveralValues(`${','.repeat(n)}"`), 15_000, 20);
  });

  // Node reads at most 16 KB of headers: each hostile value is that large, and answered in a few ms.
  it.each(Object.keys(HOSTILE_HEADERS))('webhook verifier, %s (16 KB): refused or at the key lookup in under 60 ms (a few ms here)', async (shape) => {
    const headers = (n: number) => ({ 'content-type': 'application/json', 'content-digest': 'sha-256=:AA:', 'signature-input': INPUT, signature: `sig1=:${'A'.repeat(86)}:`, ...HOSTILE_HEADERS[shape]!(n) });
    await expectLinear((n) => verifyWebhook({ method: 'POST', url: URL, headers: headers(n), body: '{}' }, { resolveKey: async () => undefined, replay: new MemoryReplayStore(), now: 1776520800 }).catch(() => undefined), 16_000, 60);
  });

  it.each(Object.keys(HOSTILE_HEADERS))('request verifier, %s (16 KB): refused or at the key lookup in under 60 ms (a few ms here)', async (shape) => {
    const input = INPUT.replace('adcp/webhook-signing/v1', 'adcp/request-signing/v1');
    const headers = (n: number) => ({ 'content-type': 'application/json', 'signature-input': input, signature: `sig1=:${'A'.repeat(86)}:`, ...HOSTILE_HEADERS[shape]!(n) });
    const capability = { supported: true, covers_content_digest: 'either' as const, required_for: [] };
    await expectLinear((n) => verifyRequestSignature({ method: 'POST', url: 'https://seller.example/mcp', headers: headers(n), body: '{}' }, { capability, resolveKey: async () => undefined, replay: new MemoryReplayStore(), now: 1776520800 }).catch(() => undefined), 16_000, 60);
  });
});

describe('the strict-JSON duplicate-key check is linear in the body', () => {
  /** Colons outside strings, one character at a time: what memberCount counts. */
  const reference = (text: string) => {
    let count = 0;
    for (let i = 0; i < text.length; i++) {
      if (text[i] === '"') {
        for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
      } else if (text[i] === ':') count++;
    }
    return count;
  };

  it('memberCount counts as a character-by-character walk does', () => {
    const texts = ['{"a":1,"b":{"c:":"d:"}}', '["a","a",{"x":1}]', '{"k\\":":"\\\\","z":[{"y":":"}]}', '[":::",{"a":{"b":{"c":1}}}]', '"::"', '[]'];
    let seed = 3;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 300; i++) {
      const parts = Array.from({ length: 1 + rnd(8) }, () => [`{"k${rnd(3)}":${rnd(9)}}`, '"a:b"', '"\\":"', `{"a":"${':'.repeat(rnd(4))}","b":[1]}`, '"x"'][rnd(5)]!);
      texts.push(`[${parts.join(',')}]`);
    }
    for (const text of texts) expect([text, memberCount(text)]).toEqual([text, reference(text)]);
  });

  it('a 1 MB ["a","a",…] (and one ending in an object) in tens of ms, not a second', async () => {
    const strings = `[${Array(262_000).fill('"a"').join(',')}]`;
    const thenObject = `[${Array(262_000).fill('"a"').join(',')},{"b":1}]`;
    expect(strings.length).toBeGreaterThan(1_000_000);
    expect(memberCount(strings)).toBe(0);
    expect(memberCount(thenObject)).toBe(1);
    expect(await bestMs(() => memberCount(strings))).toBeLessThan(50);
    expect(await bestMs(() => memberCount(thenObject))).toBeLessThan(50);
    expect(await bestMs(() => duplicateKeys(strings))).toBeLessThan(150);
  });

  it('a signed 1 MB ["a","a",…] is verified in tens of ms (step 14 took a second)', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k', use: 'sig', key_ops: ['verify'], adcp_use: 'webhook-signing' };
    const body = `[${Array(262_000).fill('"a"').join(',')}]`;
    const replay = new MemoryReplayStore();
    const ms = await bestMs(async () => {
      const signed = signWebhook({ url: URL, body }, { kid: 'k', alg: 'ed25519', privateKey });
      await verifyWebhook({ method: 'POST', url: URL, headers: signed.headers, body }, { resolveKey: async () => jwk as never, replay });
    });
    // Signing (a digest of the body too) is in the figure: about as much again as the check.
    expect(ms).toBeLessThan(200);
  });
});
