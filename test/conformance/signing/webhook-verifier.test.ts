import { MemoryReplayStore, verifyWebhook, WebhookVerificationError, type VerifierOptions } from '../../../src/signing/webhook-verifier';
import { duplicateKeys, memberCount, propertyCount, scanDuplicateKeys } from '../../../src/signing/strict-json';
import { signWebhook } from '../../../src/signing/webhook-signer';
import { decodeBinary, decodeBinaryScan } from '../../../src/signing/signature-verifier';
import { readVector, vectorFiles, webhookKeys, type TestJwk, type WebhookVector } from '../../support/vectors';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';

const keys = webhookKeys();
/** The vector's JWKS: keys.json filtered to jwks_ref, private members dropped, overrides applied. */
function jwksFor(v: WebhookVector): Map<string, TestJwk> {
  const out = new Map<string, TestJwk>();
  for (const kid of v.jwks_ref) {
    const k = keys.find((x) => x.kid === kid);
    if (!k) continue;
    const { _private_d_for_test_only: _d, ...pub } = k;
    out.set(kid, pub as TestJwk);
  }
  for (const [kid, jwk] of Object.entries(v.jwks_override ?? {})) out.set(kid, jwk as TestJwk);
  return out;
}

/** The verifier wired as each vector's `test_harness_state` describes. */
async function harness(v: WebhookVector): Promise<VerifierOptions> {
  const jwks = jwksFor(v);
  const replay = new MemoryReplayStore();
  const state = (v.test_harness_state ?? {}) as {
    replay_cache_entries?: { keyid: string; nonce: string }[];
    revoked_kids?: string[];
    per_keyid_cap_filled_for?: string;
    revocation_list_stale_seconds?: number;
  };
  const now = v.reference_now;
  for (const e of state.replay_cache_entries ?? []) await replay.insert(e.keyid, e.nonce, now + 300, now);
  const cap = 16;
  if (state.per_keyid_cap_filled_for) for (let i = 0; i < cap; i++) await replay.insert(state.per_keyid_cap_filled_for, `prefill-${i}`, now + 300, now);
  return {
    resolveKey: async (kid) => jwks.get(kid) as never,
    replay,
    perKeyidCap: cap,
    // Stale past the spec's grace: 4 × a 30-minute polling interval.
    revocation: { revokedKids: new Set(state.revoked_kids ?? []), stale: (state.revocation_list_stale_seconds ?? 0) > 4 * 1800 },
    now,
  };
}

/**
 * The replay store as verifySignature sees it: the MemoryReplayStore itself (its synchronous
 * fast path), or the same store behind a plain object or a subclass, both awaited as before.
 */
type StoreView = 'memory' | 'wrapped' | 'subclass';
class CountingSubclass extends MemoryReplayStore {
  override async count(keyid: string, now: number): Promise<number> {
    return super.count(keyid, now);
  }
}
function view(options: VerifierOptions, as: StoreView): VerifierOptions {
  if (as === 'memory') return options;
  const inner = options.replay as MemoryReplayStore;
  if (as === 'wrapped') return { ...options, replay: { count: (k, n) => inner.count(k, n), has: (k, nonce, n) => inner.has(k, nonce, n), insert: (k, nonce, e, n) => inner.insert(k, nonce, e, n) } };
  const sub = new CountingSubclass();
  Object.assign(sub, inner); // the same seen nonces
  return { ...options, replay: sub };
}

async function outcome(v: WebhookVector, as: StoreView = 'memory') {
  try {
    await verifyWebhook({ ...v.request, body: v.request.body }, view(await harness(v), as));
    return { success: true };
  } catch (err) {
    if (!(err instanceof WebhookVerificationError)) throw err;
    return { success: false, error_code: err.code };
  }
}

const load = (kind: string) => vectorFiles('webhook-signing', kind).map((f) => [f, readVector<WebhookVector>('webhook-signing', kind, f)] as const);

describe('webhook verifier against every webhook-signing vector', () => {
  it('has the published 8 positives and 21 negatives', () => {
    expect(load('positive')).toHaveLength(8);
    expect(load('negative')).toHaveLength(21);
  });

  it.each(load('positive'))('accepts %s', async (_f, v) => {
    expect(await outcome(v)).toEqual({ success: true });
  });

  it.each(load('negative'))('rejects %s with its code', async (_f, v) => {
    expect(await outcome(v)).toEqual({ success: false, error_code: v.expected_outcome.error_code });
  });

  it('016 black box: the same signed request delivered twice is refused the second time', async () => {
    const v = readVector<WebhookVector>('webhook-signing', 'positive', '001-basic-post.json');
    for (const as of ['memory', 'wrapped', 'subclass'] as const) {
      const opts = view(await harness(v), as);
      await expect(verifyWebhook(v.request, opts)).resolves.toMatchObject({ keyid: 'test-ed25519-webhook-2026' });
      await expect(verifyWebhook(v.request, opts)).rejects.toMatchObject({ code: 'webhook_signature_replayed' });
    }
  });

  it.each([...load('positive'), ...load('negative')])('answers %s the same through an awaited replay store as through the synchronous fast path', async (_f, v) => {
    const fast = await outcome(v, 'memory');
    expect(await outcome(v, 'wrapped')).toEqual(fast);
    expect(await outcome(v, 'subclass')).toEqual(fast);
  });
});

describe('webhook verifier beyond the vectors', () => {
  const jwk = keys.find((k) => k.kid === 'test-ed25519-webhook-2026')!;
  const key = { kid: jwk.kid, alg: 'ed25519' as const, privateKey: createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x, d: jwk._private_d_for_test_only }, format: 'jwk' }) };
  const { _private_d_for_test_only: _d, ...pub } = jwk;
  const opts = (): VerifierOptions => ({ resolveKey: async (kid) => (kid === jwk.kid ? (pub as never) : undefined), replay: new MemoryReplayStore() });
  const url = 'https://buyer.example/hooks/x?a=1';

  it('accepts our own signer (base64url digest), and refuses duplicate JSON keys after the crypto passed', async () => {
    const body = '{"idempotency_key":"whk_aaaaaaaaaaaaaaaa","status":"completed"}';
    const signed = signWebhook({ url, body }, key);
    await expect(verifyWebhook({ method: 'POST', url, headers: signed.headers, body }, opts())).resolves.toMatchObject({ keyid: jwk.kid });
    const dup = '{"status":"approved","status":"rejected"}';
    const s2 = signWebhook({ url, body: dup }, key);
    await expect(verifyWebhook({ method: 'POST', url, headers: s2.headers, body: dup }, opts())).rejects.toMatchObject({ code: 'webhook_body_malformed' });
  });

  it('refuses a Host that does not match the signed authority (cross-vhost replay)', async () => {
    const body = '{}';
    const signed = signWebhook({ url, body }, key);
    await expect(verifyWebhook({ method: 'POST', url, headers: { ...signed.headers, Host: 'evil.example' }, body }, opts())).rejects.toMatchObject({ code: 'webhook_target_uri_malformed' });
    await expect(verifyWebhook({ method: 'POST', url, headers: { ...signed.headers, Host: 'BUYER.example:443' }, body }, opts())).resolves.toBeTruthy();
  });

  it('refuses a duplicate sig1 label and a different URL or method', async () => {
    const body = '{}';
    const signed = signWebhook({ url, body }, key);
    const twice = { ...signed.headers, 'Signature-Input': `${signed.headers['Signature-Input']}, ${signed.headers['Signature-Input']}` };
    await expect(verifyWebhook({ method: 'POST', url, headers: twice, body }, opts())).rejects.toMatchObject({ code: 'webhook_signature_header_malformed' });
    await expect(verifyWebhook({ method: 'POST', url: `${url}&b=2`, headers: signed.headers, body }, opts())).rejects.toMatchObject({ code: 'webhook_signature_invalid' });
    await expect(verifyWebhook({ method: 'PUT', url, headers: signed.headers, body }, opts())).rejects.toMatchObject({ code: 'webhook_signature_invalid' });
  });

  it('imports keys by their material: a key rotated under the same kid, edited in place or removed is never served from the cache', async () => {
    const pair = () => {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      return { signer: { kid: 'rotating', alg: 'ed25519' as const, privateKey }, jwk: { ...publicKey.export({ format: 'jwk' }), kid: 'rotating', use: 'sig', key_ops: ['verify'], adcp_use: 'webhook-signing' } };
    };
    const [a, b] = [pair(), pair()];
    let published: object | undefined = a.jwk;
    const options = { resolveKey: async (kid: string) => (kid === 'rotating' ? (published as never) : undefined), replay: new MemoryReplayStore() };
    const send = (signer: typeof a.signer) => {
      const body = `{"n":"${Math.random()}"}`;
      return verifyWebhook({ method: 'POST', url, headers: signWebhook({ url, body }, signer).headers, body }, options);
    };
    await expect(send(a.signer)).resolves.toMatchObject({ keyid: 'rotating' });
    // A fresh object with the same material (a resolver that rebuilds JWKs per request) verifies.
    published = { ...a.jwk };
    await expect(send(a.signer)).resolves.toMatchObject({ keyid: 'rotating' });
    // Rotated: the old key's signatures fail, the new one's pass.
    published = b.jwk;
    await expect(send(a.signer)).rejects.toMatchObject({ code: 'webhook_signature_invalid' });
    await expect(send(b.signer)).resolves.toMatchObject({ keyid: 'rotating' });
    // The same JWK object given new material in place is a new key too.
    const edited = { ...a.jwk };
    published = edited;
    await expect(send(a.signer)).resolves.toMatchObject({ keyid: 'rotating' });
    edited.x = b.jwk.x;
    await expect(send(a.signer)).rejects.toMatchObject({ code: 'webhook_signature_invalid' });
    await expect(send(b.signer)).resolves.toMatchObject({ keyid: 'rotating' });
    // Removed: unknown, whatever was imported before.
    published = undefined;
    await expect(send(b.signer)).rejects.toMatchObject({ code: 'webhook_signature_key_unknown' });
    // A key whose purpose changed is refused although its material is cached.
    published = { ...b.jwk, adcp_use: 'governance-signing' };
    await expect(send(b.signer)).rejects.toMatchObject({ code: 'webhook_signature_key_purpose_invalid' });
  });

  it('reads every Signature-Input the same with its one-pass scanner as with the regex it fronts', async () => {
    const body = '{}';
    const signed = signWebhook({ url, body }, key);
    const input = signed.headers['Signature-Input'];
    const verifyWith = (sigInput: string) => verifyWebhook({ method: 'POST', url, headers: { ...signed.headers, 'Signature-Input': sigInput }, body }, opts()).then(() => 'ok', (err: { code: string; message: string }) => `${err.code}: ${err.message}`);
    // Cases the scanner leaves to the regex path (repeated parameter, sixteen digits, a token
    // value, an escape) answer as they did: refused, each with its reason.
    expect(await verifyWith(`${input};created=1`)).toBe('webhook_signature_header_malformed: parameter created appears twice');
    expect(await verifyWith(input.replace(/created=(\d+)/, 'created=1000000000000000'))).toBe('webhook_signature_header_malformed: Signature-Input is not a valid RFC 8941 dictionary with sig1');
    expect(await verifyWith(input.replace(/alg="ed25519"/, 'alg=ed25519'))).toBe('webhook_signature_header_malformed: alg must be a quoted string');
    expect(await verifyWith(input.replace(/keyid="([^"]*)"/, 'keyid="a\\"b"'))).toMatch(/^webhook_signature_/);
    // Not canonical text: the RFC 8941 parser reads it and the base carries its re-serialization.
    expect(await verifyWith(input.replace('"@method" ', '"@method"  '))).toBe('ok');
    expect(await verifyWith(input)).toBe('ok');
  });

  it('finds duplicate keys past escaped quotes and backslashes', () => {
    expect(duplicateKeys('{"a\\\\":1,"a\\\\":2}')).toEqual(['a\\']);
    expect(duplicateKeys('{"\\"":1,"\\"":2}')).toEqual(['"']);
    expect(duplicateKeys('{"x":"\\\\\\"}","x":1,"y":"\\\\","y":[]}')).toEqual(['x', 'y']);
    expect(duplicateKeys('{"k":"a\\\\","k\\\\":"b"}')).toEqual([]);
  });

  it('finds duplicate keys at any depth, not inside strings', () => {
    expect(duplicateKeys('{"a":1,"b":{"c":1,"c":2},"d":[{"e":1,"e":2}]}')).toEqual(['c', 'e']);
    expect(duplicateKeys('{"a":"\\"a\\":1","b":["a","a"]}')).toEqual([]);
    expect(duplicateKeys('{"a":1,"\\u0061":2}')).toEqual(['a']);
    expect(() => duplicateKeys('{"a":')).toThrow(SyntaxError);
  });

  it('decodes sf-binary tokens with the regex fast path exactly as the character scan does', () => {
    const random = Buffer.from(Array.from({ length: 200 }, (_, i) => (i * 37 + 11) & 0xff));
    const tokens = ['', 'AA', 'AAA', 'AAAA', 'A', '-_', '+/', '-/', '_+', 'AA==', 'AA=', 'A-==', 'A+==', 'AA AA', 'AA\n', 'AA.', 'é', 'AA:', '=', '=AA'];
    for (let n = 0; n < 70; n++) {
      const bytes = random.subarray(n, n + n);
      tokens.push(bytes.toString('base64url'), bytes.toString('base64'), bytes.toString('base64').replace(/=+$/, ''), bytes.toString('hex'));
    }
    for (const t of tokens) expect([t, decodeBinary(t)]).toEqual([t, decodeBinaryScan(t)]);
  });

  /** duplicateKeys (counts first, names only when they differ) against the naming scan alone. */
  const pinned = (text: string) => {
    JSON.parse(text);
    expect(duplicateKeys(text)).toEqual(scanDuplicateKeys(text));
    expect(duplicateKeys(text, 1)).toEqual(scanDuplicateKeys(text, 1));
    return duplicateKeys(text);
  };

  it('answers as the naming scan does on the tricky inputs (the member-count fast path)', () => {
    expect(pinned('{"a":1,"\\\\u0061":2}')).toEqual([]); // an escaped backslash, then u0061: a different key
    expect(pinned('{"a":1,"\\u0061":2}')).toEqual(['a']);
    expect(pinned('{"\\u0061":1,"a":2}')).toEqual(['a']);
    expect(pinned('{"\\u0061":1,"\\u0061":2}')).toEqual(['a']);
    expect(pinned('{"a\\"":1,"a\\u0022":2}')).toEqual(['a"']);
    expect(pinned('{"a\\\\":1,"a\\u005c":2}')).toEqual(['a\\']);
    expect(pinned('{"\\ud83d\\ude00":1,"😀":2}')).toEqual(['😀']);
    expect(pinned('{"__proto__":1,"__proto__":2}')).toEqual(['__proto__']);
    expect(pinned('{"__proto__":{"a":1,"a":2}}')).toEqual(['a']);
    expect(pinned('{"constructor":1,"toString":2,"__proto__":null}')).toEqual([]);
    expect(pinned('{"1":1,"01":2,"1.0":3}')).toEqual([]);
    expect(pinned('{"1":1,"\\u0031":2}')).toEqual(['1']);
    expect(pinned('{"a":{"b":{"c":{"d":1,"d":2}}}}')).toEqual(['d']);
    expect(pinned('[[{"x":[{"y":1}],"x":2}]]')).toEqual(['x']);
    expect(pinned('{"a":"x:y:z","b":"\\\\","c":"\\\\\\":"}')).toEqual([]);
    expect(pinned('{"a":"\\":\\"","a":1}')).toEqual(['a']);
    expect(pinned(' { "a" : 1 , "b" : [ 1 , { "a" : 2 } ] } ')).toEqual([]);
    expect(pinned(' { "a" : 1 , "a" : 2 } ')).toEqual(['a']);
    expect(pinned('"a:b"')).toEqual([]);
    expect(pinned('12')).toEqual([]);
    expect(pinned('{}')).toEqual([]);
    expect(pinned('[]')).toEqual([]);
    // Several objects lose members: all of them are named, up to the limit, in text order.
    expect(pinned('{"a":1,"a":2,"b":{"c":1,"c":2,"c":3},"d":[{"e":1,"e":2}],"f":1,"f":2,"g":1,"g":2}')).toEqual(['a', 'c', 'c', 'e']);
    // One object loses a member while another gains none: the sum still differs.
    expect(pinned('{"a":{},"b":{"x":1,"x":2}}')).toEqual(['x']);
  });

  it('counts every member of the text and every property of its parse alike when no key repeats', () => {
    for (const text of ['{"a":1,"b":{"c":[1,{"d":2}]},"e":"f:g"}', '[{"a":1},{"a":1},[{"a":{"a":1}}]]', '{"k\\\\":"v\\"","k":"v:"}']) {
      expect(memberCount(text)).toBe(propertyCount(JSON.parse(text)));
    }
    expect(memberCount('{"a":1,"a":2}')).toBe(2);
    expect(propertyCount(JSON.parse('{"a":1,"a":2}'))).toBe(1);
  });

  it('takes nesting as deep as JSON.parse does (no recursion)', () => {
    const depth = 100_000;
    const deep = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    expect(pinned(deep)).toEqual([]);
    const deepDup = '[{"a":'.repeat(depth) + '1,"a":2' + '}]'.repeat(depth);
    expect(duplicateKeys(deepDup)).toEqual(['a']);
  });

  it('answers as the naming scan does on generated bodies with duplicates, escapes and colons', () => {
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return (seed >>> 16) % n;
    };
    const keyTexts = ['"a"', '"\\u0061"', '"b"', '"\\"a"', '"\\u0022a"', '"a\\\\"', '"a\\u005c"', '"k:"', '"__proto__"', '"\\u005f_proto__"', '"1"'];
    const valueOf = (depth: number): string => {
      const r = rnd(depth > 3 ? 3 : 6);
      if (r === 0) return '"x:\\"y\\\\"';
      if (r === 1) return String(rnd(100));
      if (r === 2) return 'null';
      if (r === 3) return `[${Array.from({ length: rnd(3) }, () => valueOf(depth + 1)).join(',')}]`;
      return `{${Array.from({ length: rnd(4) }, () => `${keyTexts[rnd(keyTexts.length)]}:${valueOf(depth + 1)}`).join(',')}}`;
    };
    let withDuplicates = 0;
    for (let i = 0; i < 5000; i++) {
      const text = `{${Array.from({ length: 1 + rnd(4) }, () => `${keyTexts[rnd(keyTexts.length)]}:${valueOf(1)}`).join(',')}}`;
      if (pinned(text).length > 0) withDuplicates++;
    }
    expect(withDuplicates).toBeGreaterThan(500);
    expect(withDuplicates).toBeLessThan(4900);
  });
});
