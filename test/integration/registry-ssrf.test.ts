import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { issueApiKey } from '../../src/application/api-keys';
import { fetchDocument } from '../../src/shared/document-fetch';
import { fetchJson } from '../../src/shared/guarded-fetch';
import { startTestGateway } from '../support/gateway';
import { eventually } from '../support/infra';
import { startOrigins } from '../support/origins';

/**
 * The registry's outbound fetches (adagents.json, ads.txt, brand.json, JWKS) never reach a private
 * network. A TCP listener on every local address counts connection attempts: a refusal must come
 * before any connection, not from a failed TLS handshake.
 */
describe('registry SSRF guard', () => {
  let listener: net.Server;
  let port: number;
  const connections: string[] = [];

  beforeAll(async () => {
    listener = net.createServer((socket) => {
      connections.push(String(socket.remoteAddress));
      socket.destroy();
    });
    // '::' is dual-stack here: IPv4, IPv6 and IPv4-mapped attempts would all land on it.
    await new Promise<void>((resolve) => listener.listen(0, '::', resolve));
    port = (listener.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => listener.close(() => resolve())));

  it.each([
    ['loopback', '127.0.0.1'],
    ['IPv6 loopback', '[::1]'],
    ['IPv4-mapped loopback', '[::ffff:127.0.0.1]'],
    ['IPv4-mapped link-local (cloud metadata)', '[::ffff:169.254.169.254]'],
    ['the unspecified address', '0.0.0.0'],
    ['link-local (cloud metadata)', '169.254.169.254'],
    ['IPv6 link-local', '[fe80::1]'],
    ['RFC 1918', '10.0.0.1'],
    ['RFC 1918', '192.168.1.1'],
    ['IPv6 unique-local', '[fd00::1]'],
    ['carrier-grade NAT', '100.64.0.1'],
    ['NAT64 of loopback', '[64:ff9b::7f00:1]'],
    ['a DNS name resolving to loopback', 'localhost'],
  ])('refuses %s (%s) before connecting', async (_what, host) => {
    const before = connections.length;
    const answer = await fetchDocument(`https://${host}:${port}/.well-known/adagents.json`, { maxBytes: 1024, maxRedirects: 3, timeoutMs: 3000 });
    expect(answer.error).toEqual({ kind: 'connection', message: expect.stringMatching(/^Refused to connect to .+: it resolves to a private or reserved address$/) });
    await expect(fetchJson(`https://${host}:${port}/brand.json`, { maxBytes: 1024, timeoutMs: 3000 })).rejects.toThrow(/private or reserved/);
    expect(connections.length).toBe(before);
  });

  it('through the API: an authoritative_location, a redirect and a brand hop into private space are refused, and nothing connects', async () => {
    const origins = await startOrigins({
      'ptr-private.example': { '/.well-known/adagents.json': { body: { authoritative_location: `https://localhost:${port}/adagents.json` } } },
      'redirect-private.example': { '/.well-known/adagents.json': { status: 302, headers: { location: `https://[::ffff:127.0.0.1]:${port}/adagents.json` } } },
      'brand-private.example': { '/.well-known/brand.json': { body: { authoritative_location: `https://169.254.169.254:${port}/brand.json` } } },
    });
    const gw = await startTestGateway({ REGISTRY_ORIGIN_OVERRIDES: origins.overrides });
    try {
      const admin = (await issueApiKey(gw.app.store, { org: 'ops', role: 'admin' }, { now: new Date().toISOString() })).key;
      await eventually(async () => (await fetch(`${gw.url}/readyz`)).status === 200, 20_000, 'readyz');
      const revalidate = async (domain: string) => {
        const r = await fetch(`${gw.url}/api/registry/publisher/${domain}/adagents/revalidate`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } });
        return { status: r.status, body: (await r.json()) as Record<string, any> };
      };
      const ptr = await revalidate('ptr-private.example');
      expect(ptr.status).toBe(200);
      expect(ptr.body.adagents_valid).toBe(false);
      expect(JSON.stringify(ptr.body.issues.errors)).toContain('private or reserved address');

      const redirected = await revalidate('redirect-private.example');
      expect(redirected.status).toBe(200);
      expect(redirected.body.adagents_valid).toBe(false);
      expect(JSON.stringify(redirected.body.issues.errors)).toMatch(/Refused cross-registrable-domain redirect/);

      await gw.app.brandCrawler.crawl('brand-private.example');
      const resolved = await fetch(`${gw.url}/api/brands/resolve/bulk`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ domains: ['brand-private.example'] }) });
      expect(((await resolved.json()) as { results: Record<string, unknown> }).results['brand-private.example']).toBeNull();
      expect(connections).toEqual([]);
    } finally {
      await gw.stop();
      await origins.close();
    }
  }, 60_000);
});
