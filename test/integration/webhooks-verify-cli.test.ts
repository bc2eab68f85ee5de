import { spawn } from 'node:child_process';
import path from 'node:path';
import { BIN } from '../support/gateway';
import { readVector, vectorFiles, VECTORS, type WebhookVector } from '../support/vectors';

/** Runs the real bin with the request on stdin; returns exit code, stdout line and stderr. */
function verifyCli(args: string[], stdin: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'webhooks', 'verify', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('exit', (code) => resolve({ code, out, err }));
    child.stdin.end(stdin);
  });
}

describe('adcp-gateway webhooks verify', () => {
  const jwks = path.join(VECTORS, 'webhook-signing', 'keys.json');

  it.each([
    ...vectorFiles('webhook-signing', 'positive').map((f) => ['positive', f] as const),
    ...['001-wrong-tag.json', '009-content-digest-mismatch.json', '015-signature-invalid.json', '021-base64-alphabet-mixing.json'].map((f) => ['negative', f] as const),
  ])('%s/%s: one JSON line and the exit code', async (kind, f) => {
    const v = readVector<WebhookVector>('webhook-signing', kind, f);
    const r = await verifyCli(['--jwks', jwks, '--now', String(v.reference_now)], JSON.stringify(v.request));
    expect(r.out.endsWith('\n') && r.out.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(r.out)).toEqual(v.expected_outcome.success ? { success: true } : { success: false, error_code: v.expected_outcome.error_code });
    expect(r.code).toBe(v.expected_outcome.success ? 0 : 1);
  }, 20_000);

  it('answers bad input in the same shape', async () => {
    const r = await verifyCli(['--jwks', jwks], '{"method":"POST"}');
    expect(JSON.parse(r.out)).toEqual({ success: false, error_code: 'input_malformed' });
    expect(r.code).toBe(1);
    const noJwks = await verifyCli([], '{}');
    expect({ code: noJwks.code, out: JSON.parse(noJwks.out) }).toEqual({ code: 2, out: { success: false, error_code: 'usage_error' } });
    const unknownOption = await verifyCli(['--jwks', jwks, '--url'], '{}');
    expect({ code: unknownOption.code, out: JSON.parse(unknownOption.out) }).toEqual({ code: 2, out: { success: false, error_code: 'usage_error' } });
  }, 20_000);
});
