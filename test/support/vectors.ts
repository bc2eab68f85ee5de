import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from './gateway';

/** The copied AdCP signing vectors (test/vectors/README.md). */
export const VECTORS = path.join(ROOT, 'test', 'vectors', 'signing-vectors');

export function readVector<T = Record<string, unknown>>(...parts: string[]): T {
  return JSON.parse(fs.readFileSync(path.join(VECTORS, ...parts), 'utf8')) as T;
}

export function vectorFiles(...dir: string[]): string[] {
  return fs
    .readdirSync(path.join(VECTORS, ...dir))
    .filter((f) => f.endsWith('.json'))
    .sort();
}

export interface WebhookVector {
  name: string;
  reference_now: number;
  request: { method: string; url: string; headers: Record<string, string>; body: string };
  jwks_ref: string[];
  expected_signature_base?: string;
  expected_outcome: { success: boolean; error_code?: string };
  test_harness_state?: Record<string, unknown>;
  jwks_override?: Record<string, Record<string, unknown>>;
}

export interface TestJwk {
  kid: string;
  kty: string;
  crv: string;
  x: string;
  y?: string;
  adcp_use?: string;
  _private_d_for_test_only?: string;
  [k: string]: unknown;
}

export const webhookKeys = () => readVector<{ keys: TestJwk[] }>('webhook-signing', 'keys.json').keys;
