import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { issueApiKey } from '../../src/application/api-keys';
import { canonicalTarget } from '../../src/signing/canonical-url';
import { REQUEST_SIGNING_TAG } from '../../src/signing/request-verifier';
import { signatureBase, signatureParams } from '../../src/signing/signature-base';
import { signBytes } from '../../src/signing/webhook-signer';
import { loadConfig } from '../../src/config';
import { startGateway } from '../../src/main';
import { adcp31 } from '../support/adcp31';
import { startTestGateway } from '../support/gateway';

/** A buyer agent's request-signing key, and a signer for MCP calls with it (label sig1, no digest). */
function buyerAgent(kid: string) {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid, alg: 'EdDSA', use: 'sig', key_ops: ['verify'], adcp_use: 'request-signing' };
  const sign = (url: string, body: string, headers: Record<string, string> = {}) => {
    const created = Math.floor(Date.now() / 1000);
    const params = signatureParams(['@method', '@target-uri', '@authority', 'content-type'], [
      ['created', created],
      ['expires', created + 120],
      ['nonce', randomBytes(16).toString('base64url')],
      ['keyid', kid],
      ['alg', 'ed25519'],
      ['tag', REQUEST_SIGNING_TAG],
    ]);
    const { targetUri, authority } = canonicalTarget(url);
    const base = signatureBase([['@method', 'POST'], ['@target-uri', targetUri], ['@authority', authority], ['content-type', 'application/json']], params);
    const signature = signBytes('ed25519', Buffer.from(base), privateKey).toString('base64url');
    return { 'content-type': 'application/json', accept: 'application/json', 'signature-input': `sig1=${params}`, signature: `sig1=:${signature}:`, ...headers };
  };
  const send = (url: string, body: string, headers: Record<string, string> = {}) => fetch(url, { method: 'POST', headers: sign(url, body, headers), body });
  return { jwk, sign, send };
}

const call = (name: string, args: object = {}) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

describe('incoming request signatures on MCP (REQUEST_SIGNERS_FILE)', () => {
  const acme = buyerAgent('acme-2026');
  const strict = buyerAgent('strict-2026');
  let gw: Awaited<ReturnType<typeof startTestGateway>>;
  let url: string;

  beforeAll(async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'signers-')), 'signers.json');
    fs.writeFileSync(file, JSON.stringify({ required_for: ['create_media_buy'], signers: [{ org: 'acme', jwks: { keys: [acme.jwk] } }, { org: 'strict', jwks: { keys: [strict.jwk] }, require_signature: true }] }));
    gw = await startTestGateway({ REQUEST_SIGNERS_FILE: file });
    url = `${gw.url}/mcp`;
  });
  afterAll(async () => gw?.stop());

  const key = async (org: string) => {
    const { key } = await issueApiKey(gw.app.store, { org, role: 'buyer' }, { now: new Date().toISOString() });
    await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
    return key;
  };

  it('declares request_signing in get_adcp_capabilities, and a valid signature alone is the caller’s credential', async () => {
    const res = await acme.send(url, call('get_adcp_capabilities'));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { result: { structuredContent: { request_signing?: unknown } } };
    expect(body.result.structuredContent.request_signing).toEqual({ supported: true, covers_content_digest: 'either', required_for: ['create_media_buy'] });
  });

  it('refuses a bad signature with 401 and its code, even beside a valid API key', async () => {
    const token = await key('acme');
    const res = await acme.send(url, call('get_products', { buying_mode: 'brief', brief: 'video' }), { authorization: `Bearer ${token}`, 'signature-input': 'sig1=("@method");created=1' });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Signature error="request_signature_params_incomplete"');
    expect(((await res.json()) as { error: { data: { adcp_error: { code: string } } } }).error.data.adcp_error.code).toBe('AUTH_REQUIRED');
  });

  it('refuses an unsigned call to a tool in required_for, before looking at its API key', async () => {
    const token = await key('acme');
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` }, body: call('create_media_buy', {}) });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Signature error="request_signature_required"');
  });

  it('answers a signature refusal in the release the call pins: 3.1 tells a missing signature (AUTH_MISSING) from a refused one (AUTH_INVALID)', async () => {
    const token = await key('acme');
    const bad = await acme.send(url, call('get_products', { buying_mode: 'brief', brief: 'video', adcp_version: '3.1' }), { authorization: `Bearer ${token}`, 'signature-input': 'sig1=("@method");created=1' });
    expect(bad.status).toBe(401);
    const refused = ((await bad.json()) as { error: { data: Record<string, any> } }).error.data;
    expect(refused).toMatchObject({ adcp_version: '3.1', adcp_error: { code: 'AUTH_INVALID', recovery: 'terminal', details: { signature_error: 'request_signature_params_incomplete' } } });
    expect(adcp31().validate('core/error.json', refused.adcp_error)).toMatchObject({ valid: true });
    const unsigned = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` }, body: call('create_media_buy', { adcp_version: '3.1' }) });
    expect(unsigned.status).toBe(401);
    const missing = ((await unsigned.json()) as { error: { data: Record<string, any> } }).error.data;
    expect(missing).toMatchObject({ adcp_version: '3.1', adcp_error: { code: 'AUTH_MISSING', recovery: 'correctable', details: { signature_error: 'request_signature_required' } } });
    expect(adcp31().validate('core/error.json', missing.adcp_error)).toMatchObject({ valid: true });
  });

  it('refuses a signature by another organisation’s key beside an API key', async () => {
    const token = await key('acme');
    const res = await strict.send(url, call('get_adcp_capabilities'), { authorization: `Bearer ${token}` });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Signature error="request_signature_key_unknown"');
  });

  it('an organisation the operator marks require_signature cannot call unsigned, even with its API key', async () => {
    const token = await key('strict');
    const unsigned = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${token}` }, body: call('get_adcp_capabilities') });
    expect(unsigned.status).toBe(401);
    expect(unsigned.headers.get('www-authenticate')).toBe('Signature error="request_signature_required"');
    expect((await strict.send(url, call('get_adcp_capabilities'), { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it('refuses the same signed request twice (the nonces live in the database every instance shares)', async () => {
    const body = call('get_adcp_capabilities');
    const headers = acme.sign(url, body);
    expect((await fetch(url, { method: 'POST', headers, body })).status).toBe(200);
    const replayed = await fetch(url, { method: 'POST', headers, body });
    expect(replayed.status).toBe(401);
    expect(replayed.headers.get('www-authenticate')).toBe('Signature error="request_signature_replayed"');
  });
});

describe('without REQUEST_SIGNERS_FILE', () => {
  it('does not declare request signing and ignores Signature headers (bearer authentication only)', async () => {
    const gw = await startTestGateway();
    try {
      const { key } = await issueApiKey(gw.app.store, { org: 'plain', role: 'buyer' }, { now: new Date().toISOString() });
      await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
      const res = await fetch(`${gw.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: `Bearer ${key}`, 'signature-input': 'garbage', signature: 'garbage' }, body: call('get_adcp_capabilities') });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { result: { structuredContent: Record<string, unknown> } }).result.structuredContent).not.toHaveProperty('request_signing');
    } finally {
      await gw.stop();
    }
  });

  it.each([
    ['no signers', { signers: [] }, /signers/],
    ['a key without kid', { signers: [{ org: 'a', jwks: { keys: [{ kty: 'OKP' }] } }] }, /every key needs a kid/],
    ['one kid for two signers', { signers: [{ org: 'a', jwks: { keys: [{ kid: 'k' }] } }, { org: 'b', jwks: { keys: [{ kid: 'k' }] } }] }, /kid k appears more than once/],
  ])('a signers file with %s stops the gateway at startup with its reason', async (_what, content, reason) => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'signers-')), 'signers.json');
    fs.writeFileSync(file, JSON.stringify(content));
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'signers-data-'));
    await expect(startGateway(loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: dataDir, REQUEST_SIGNERS_FILE: file }))).rejects.toThrow(reason);
  });
});
