import { generateKeyPairSync } from 'node:crypto';
import { parseOriginOverrides } from '../../src/shared/origin-overrides';
import { JwksResolver } from '../../src/webhooks/receiver/jwks-resolver';
import { eventually } from '../support/infra';
import { startOrigins, type ServedDoc } from '../support/origins';

const jwk = (kid: string) => ({ ...generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }), kid, use: 'sig', adcp_use: 'request-signing' });

describe("the receiver's sender keys (brand.json → jwks_uri over real HTTP)", () => {
  it('keep verifying through an outage of the sender, refresh after it, and find a rotated key', async () => {
    const site: Record<string, ServedDoc> = {
      '/.well-known/brand.json': { body: { agents: [{ id: 'agent_1', url: 'https://seller.example/mcp', jwks_uri: 'https://seller.example/keys.json' }] } },
      '/keys.json': { body: { keys: [jwk('k1')] } },
    };
    const origins = await startOrigins({ 'seller.example': site });
    try {
      const overrides = parseOriginOverrides(origins.overrides);
      // The cache's clock is the test's: time moves when the test says so, not by sleeping.
      let now = Date.now();
      const resolver = new JwksResolver(overrides, { ttlMs: 300_000, retryMs: 30_000, now: () => now });
      expect((await resolver.resolve('seller.example', 'agent_1', 'k1'))?.kid).toBe('k1');
      expect(await resolver.agentUrl('seller.example', 'agent_1')).toBe('https://seller.example/mcp');

      // The sender's site goes down: the keys fetched before keep answering past their TTL.
      site['/.well-known/brand.json']!.status = 503;
      now += 301_000;
      expect((await resolver.resolve('seller.example', 'agent_1', 'k1'))?.kid).toBe('k1');
      await eventually(() => origins.hits.filter((h) => h.path === '/.well-known/brand.json').length >= 2, 5000, 'a refresh attempt');
      expect((await resolver.resolve('seller.example', 'agent_1', 'k1'))?.kid).toBe('k1');
      // A receiver that never had the keys cannot verify: that is an error (503), not a bad signature.
      await expect(new JwksResolver(overrides).resolve('seller.example', 'agent_1', 'k1')).rejects.toThrow(/503/);

      // Back up, with a rotated key: an unknown kid fetches the set again (once the retry window passed).
      site['/.well-known/brand.json']!.status = 200;
      site['/keys.json']!.body = { keys: [jwk('k1'), jwk('k2')] };
      now += 31_000;
      expect((await resolver.resolve('seller.example', 'agent_1', 'k2'))?.kid).toBe('k2');
      const fetches = origins.hits.filter((h) => h.path === '/keys.json').length;
      // Bogus kids right after cost nothing more.
      for (let i = 0; i < 5; i++) expect(await resolver.resolve('seller.example', 'agent_1', `bogus-${i}`)).toBeUndefined();
      expect(origins.hits.filter((h) => h.path === '/keys.json').length).toBe(fetches);
    } finally {
      await origins.close();
    }
  });

  it('a JWKS or brand.json with a duplicate key, or bytes that are not UTF-8, is refused as the receiver refuses such a body, saying why', async () => {
    const key = JSON.stringify(jwk('k1'));
    const brand = (jwks: string) => ({ body: { agents: [{ id: 'agent_1', url: 'https://x.example/mcp', jwks_uri: `https://${jwks}/keys.json` }] } });
    const origins = await startOrigins({
      // Last-wins parsing would find k1 in each of these.
      'dupkeys.example': { '/.well-known/brand.json': brand('dupkeys.example'), '/keys.json': { raw: `{"keys":[],"keys":[${key}]}` } },
      'latin1keys.example': { '/.well-known/brand.json': brand('latin1keys.example'), '/keys.json': { raw: Buffer.concat([Buffer.from(`{"keys":[${key}],"note":"caf`), Buffer.from([0xe9]), Buffer.from('"}')]) } },
      'dupbrand.example': { '/.well-known/brand.json': { raw: `{"agents":[],"agents":[{"id":"agent_1","jwks_uri":"https://dupkeys2.example/keys.json"}]}` } },
    });
    try {
      const resolver = new JwksResolver(parseOriginOverrides(origins.overrides));
      await expect(resolver.resolve('dupkeys.example', 'agent_1', 'k1')).rejects.toThrow('https://dupkeys.example/keys.json: has the key "keys" more than once in one object');
      await expect(resolver.resolve('latin1keys.example', 'agent_1', 'k1')).rejects.toThrow('https://latin1keys.example/keys.json: is not valid UTF-8');
      await expect(resolver.resolve('dupbrand.example', 'agent_1', 'k1')).rejects.toThrow('https://dupbrand.example/.well-known/brand.json: has the key "agents" more than once in one object');
    } finally {
      await origins.close();
    }
  });
});
