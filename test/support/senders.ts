import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { signWebhook } from '../../src/signing/webhook-signer';
import type { ServedDoc } from './origins';

/** A webhook sender as a buyer's receiver sees it: a brand.json naming an agent and its JWKS. */
export interface TestSender {
  domain: string;
  agentId: string;
  kid: string;
  privateKey: KeyObject;
  /** The documents startOrigins serves for `domain`. */
  docs: Record<string, ServedDoc>;
  /** Signs `body` for `url` as this sender (a fresh nonce unless one is given). */
  sign(url: string, body: string, nonce?: string): Record<string, string>;
}

/** A sender with its own Ed25519 key published under `kid` (any sender may publish any kid). */
export function testSender(domain: string, agentId: string, kid: string): TestSender {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid, alg: 'EdDSA', use: 'sig', key_ops: ['verify'], adcp_use: 'webhook-signing' };
  return {
    domain,
    agentId,
    kid,
    privateKey,
    docs: {
      '/.well-known/brand.json': { body: { version: '1.0', agents: [{ type: 'sales', url: `https://${domain}/mcp`, id: agentId, jwks_uri: `https://${domain}/.well-known/jwks.json` }] } },
      '/.well-known/jwks.json': { body: { keys: [jwk] } },
    },
    sign: (url, body, nonce) => signWebhook({ url, body }, { kid, alg: 'ed25519', privateKey }, nonce ? { nonce } : {}).headers,
  };
}

/** An AdCP webhook envelope (MCP style) with a fresh idempotency key. */
export function envelope(taskId: string, status = 'completed'): string {
  const key = `whk_${Date.now()}_${Math.random().toString(36).slice(2, 12)}`;
  return JSON.stringify({ idempotency_key: key, task_id: taskId, operation_id: 'op', task_type: 'create_media_buy', status, timestamp: new Date().toISOString(), result: { media_buy_id: 'mb_1' } });
}
