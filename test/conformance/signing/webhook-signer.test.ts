import { createHash, createPrivateKey, createPublicKey, verify } from 'node:crypto';
import { serializeInnerList } from 'structured-headers';
import { cachedCanonicalTarget, canonicalTarget, MalformedTargetUriError } from '../../../src/signing/canonical-url';
import { contentDigest, sha256 } from '../../../src/signing/content-digest';
import { signatureBase, signatureParams } from '../../../src/signing/signature-base';
import { signBytes, signWebhook, WEBHOOK_SIGNING_TAG } from '../../../src/signing/webhook-signer';
import { readVector, vectorFiles, webhookKeys, type TestJwk, type WebhookVector } from '../../support/vectors';

const privateKeyOf = (k: TestJwk) =>
  createPrivateKey({ key: { kty: k.kty, crv: k.crv, x: k.x, ...(k.y ? { y: k.y } : {}), d: k._private_d_for_test_only }, format: 'jwk' });
const publicKeyOf = (k: TestJwk) => createPublicKey({ key: { kty: k.kty, crv: k.crv, x: k.x, ...(k.y ? { y: k.y } : {}) }, format: 'jwk' });

/** The parameters a vector signed with, read back from its Signature-Input. */
function paramsOf(v: WebhookVector) {
  const input = v.request.headers['Signature-Input']!;
  const sig1 = /(?:^|,\s*)sig1=([^,]*\))([^,]*)/.exec(input)!;
  const num = (name: string) => Number(new RegExp(`;${name}=(\\d+)`).exec(sig1[2]!)![1]);
  const str = (name: string) => new RegExp(`;${name}="([^"]*)"`).exec(sig1[2]!)![1]!;
  return { created: num('created'), expires: num('expires'), nonce: str('nonce'), keyid: str('keyid'), alg: str('alg') };
}

describe('RFC 9421 / RFC 9530 examples', () => {
  const rfc = readVector<Record<string, any>>('rfc', 'rfc9421-B.2.6-and-rfc9530-examples.json');

  it('reproduces the B.2.6 signature base and its Ed25519 signature byte for byte', () => {
    const params = signatureParams(['date', '@method', '@path', '@authority', 'content-type', 'content-length'], [
      ['created', 1618884473],
      ['keyid', 'test-key-ed25519'],
    ]);
    const base = signatureBase(
      [
        ['date', 'Tue, 20 Apr 2021 02:07:55 GMT'],
        ['@method', 'POST'],
        ['@path', '/foo'],
        ['@authority', 'example.com'],
        ['content-type', 'application/json'],
        ['content-length', '18'],
      ],
      params,
    );
    expect(`sig-b26=${params}`).toBe(rfc.rfc9421_B_2_6.signature_input);
    expect(base).toBe(rfc.rfc9421_B_2_6.signature_base);
    const key = createPrivateKey({ key: rfc.rfc9421_B_1_4_test_key_ed25519.jwk, format: 'jwk' });
    expect(`sig-b26=:${signBytes('ed25519', Buffer.from(base), key).toString('base64')}:`).toBe(rfc.rfc9421_B_2_6.signature);
  });

  it('computes the RFC 9530 sha-256 Content-Digest (standard base64 there, base64url by default here)', () => {
    const body = rfc.rfc9530_examples.body as string;
    expect(contentDigest(body, 'base64')).toBe(rfc.rfc9530_examples.content_digest_sha256);
    expect(contentDigest(body)).toBe(`sha-256=:${Buffer.from('X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=', 'base64').toString('base64url')}:`);
  });
});

describe('webhook signer against every positive webhook-signing vector', () => {
  const keys = webhookKeys();
  const positives = vectorFiles('webhook-signing', 'positive').map((f) => [f, readVector<WebhookVector>('webhook-signing', 'positive', f)] as const);

  it('covers the eight published positives', () => expect(positives).toHaveLength(8));

  it.each(positives)('%s: same signature base; the signature verifies (and is byte-equal for Ed25519)', (_f, v) => {
    const p = paramsOf(v);
    const jwk = keys.find((k) => k.kid === p.keyid)!;
    const signed = signWebhook(
      { method: v.request.method, url: v.request.url, body: v.request.body },
      { kid: p.keyid, alg: p.alg as 'ed25519' | 'ecdsa-p256-sha256', privateKey: privateKeyOf(jwk) },
      { now: p.created, validitySeconds: p.expires - p.created, nonce: p.nonce, digestEncoding: 'base64' },
    );
    expect(signed.signatureBase).toBe(v.expected_signature_base);
    expect(signed.headers['Content-Digest']).toBe(v.request.headers['Content-Digest']);
    const ours = Buffer.from(/^sig1=:([^:]+):$/.exec(signed.headers.Signature)![1]!, 'base64url');
    const dsa = p.alg === 'ed25519' ? null : 'sha256';
    expect(verify(dsa, Buffer.from(signed.signatureBase), { key: publicKeyOf(jwk), dsaEncoding: 'ieee-p1363' }, ours)).toBe(true);
    if (p.alg === 'ed25519') {
      const theirs = /(?:^|,\s*)sig1=:([^:]+):/.exec(v.request.headers.Signature!)![1]!;
      expect(ours.toString('base64url')).toBe(theirs);
    }
  });

  it('emits the profile: sig1, five components, tag, 300 s window, fresh 16-byte nonces, base64url', () => {
    const key = { kid: 'k1', alg: 'ed25519' as const, privateKey: privateKeyOf(keys[0]!) };
    const a = signWebhook({ url: 'https://buyer.example.com:443/hook?x=1', body: '{"a":1}' }, key, { now: 1_800_000_000 });
    const b = signWebhook({ url: 'https://buyer.example.com:443/hook?x=1', body: '{"a":1}' }, key, { now: 1_800_000_000 });
    expect(a.headers['Signature-Input']).toMatch(
      /^sig1=\("@method" "@target-uri" "@authority" "content-type" "content-digest"\);created=1800000000;expires=1800000300;nonce="[A-Za-z0-9_-]{22}";keyid="k1";alg="ed25519";tag="adcp\/webhook-signing\/v1"$/,
    );
    expect(a.headers['Signature-Input']).not.toBe(b.headers['Signature-Input']);
    expect(a.signatureBase).toContain('"@target-uri": https://buyer.example.com/hook?x=1\n"@authority": buyer.example.com\n');
    expect(a.headers['Content-Digest']).toMatch(/^sha-256=:[A-Za-z0-9_-]{43}:$/);
    expect(a.headers.Signature).toMatch(/^sig1=:[A-Za-z0-9_-]{86}:$/);
    expect(a.signatureBase).toContain(`tag="${WEBHOOK_SIGNING_TAG}"`);
    // A longer validity is capped at the profile's 300 s.
    const [, c, e] = /created=(\d+);expires=(\d+)/.exec(signWebhook({ url: 'https://b.example/h', body: '{}' }, key, { validitySeconds: 3600 }).headers['Signature-Input'])!;
    expect(Number(e) - Number(c)).toBe(300);
  });
});

/** The signer's fast paths (issue 20) against what they replace, so they cannot drift from it. */
describe('signer fast paths', () => {
  const library = (components: string[], params: [string, string | number][]) => serializeInnerList([components.map((c) => [c, new Map()]), new Map(params)]);

  it('writes @signature-params exactly as the RFC 8941 serializer does, and defers to it for anything to escape or refuse', () => {
    const components = ['@method', '@target-uri', '@authority', 'content-type', 'content-digest'];
    const plain: [string, string | number][] = [['created', 1_800_000_000], ['expires', 1_800_000_300], ['nonce', 'AbC-_9'], ['keyid', 'k 1!#~'], ['alg', 'ed25519'], ['tag', 'adcp/webhook-signing/v1']];
    expect(signatureParams(components, plain)).toBe(library(components, plain));
    // Escapes, decimals and a repeated key (last value wins, at the first position) are the library's.
    for (const params of [[['keyid', 'a"b\\c']], [['created', 1.5]], [['nonce', 'a'], ['nonce', 'b']], [['created', -7]]] as [string, string | number][][]) {
      expect(signatureParams(components, params)).toBe(library(components, params));
    }
    // What RFC 8941 cannot carry still throws, as before.
    expect(() => signatureParams(components, [['keyid', 'caf\u00e9']])).toThrow();
    expect(() => signatureParams(components, [['Keyid', 'k']])).toThrow();
    expect(() => signatureParams(components, [['created', 1e16]])).toThrow();
    expect(() => signatureParams(['\u00e9'], [])).toThrow();
  });

  it('builds the base line by line as before', () => {
    const lines: [string, string][] = [['@method', 'POST'], ['content-type', 'application/json']];
    expect(signatureBase(lines, '("@method" "content-type")')).toBe('"@method": POST\n"content-type": application/json\n"@signature-params": ("@method" "content-type")');
  });

  it('hashes strings as their UTF-8 bytes and bytes as themselves, like createHash', () => {
    for (const body of ['', '{"note":"bench \u2713"}', Buffer.from([0, 255, 10]), new Uint8Array([1, 2, 3])]) {
      expect(sha256(body)).toEqual(createHash('sha256').update(body).digest());
      expect(sha256(body, 'base64url')).toBe(createHash('sha256').update(body).digest('base64url'));
    }
  });

  it('draws distinct 16-byte nonces across many refills of its batch', () => {
    const key = { kid: 'k1', alg: 'ed25519' as const, privateKey: privateKeyOf(webhookKeys().find((k) => k.kty === 'OKP')!) };
    const nonces = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const nonce = /;nonce="([^"]*)"/.exec(signWebhook({ url: 'https://b.example/h', body: '{}' }, key).headers['Signature-Input'])![1]!;
      expect(nonce).toMatch(/^[A-Za-z0-9_-]{22}$/);
      nonces.add(nonce);
    }
    expect(nonces.size).toBe(2000);
  });

  it('keeps canonical targets by URL string only: the same answer as computing it, malformed ones refused every time', () => {
    for (const url of ['https://Buyer.Example.com:443/a/./b/../c?x=%7e', 'http://[::1]:8080/h']) {
      expect(cachedCanonicalTarget(url)).toEqual(canonicalTarget(url));
      expect(cachedCanonicalTarget(url)).toEqual(canonicalTarget(url));
    }
    for (let i = 0; i < 2; i++) expect(() => cachedCanonicalTarget('https://a..example/h')).toThrow(MalformedTargetUriError);
  });
});
