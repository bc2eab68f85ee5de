import { execFile } from 'node:child_process';

import { promisify } from 'node:util';

/**
 * `@adcp/sdk` as an interop oracle, run in a child Node process: the SDK needs jose 6, which is
 * ESM-only and loads under plain Node's require(esm) but not inside Jest's module system. The
 * child reads one JSON job on stdin and answers one JSON line.
 */
export interface OracleRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string;
}

export type OracleVerdict = { status: 'verified'; keyid: string } | { status: 'rejected'; code: string };

const run = promisify(execFile);

/** Verifies each request with the SDK's webhook verifier (one replay store across the batch). */
export async function sdkVerifyWebhooks(jwks: Record<string, unknown>[], requests: OracleRequest[]): Promise<OracleVerdict[]> {
  const child = run(process.execPath, [__filename, 'verify-webhooks'], { maxBuffer: 16 * 1024 * 1024 });
  child.child.stdin!.end(JSON.stringify({ jwks, requests }));
  const { stdout } = await child;
  return JSON.parse(stdout) as OracleVerdict[];
}

/** Signs each request with the SDK's webhook signer (6.11.0): the headers it would send. */
export async function sdkSignWebhooks(key: { kid: string; privateJwk: Record<string, unknown> }, requests: { url: string; body: string }[]): Promise<Record<string, string>[]> {
  const child = run(process.execPath, [__filename, 'sign-webhooks'], { maxBuffer: 16 * 1024 * 1024 });
  child.child.stdin!.end(JSON.stringify({ key, requests }));
  const { stdout } = await child;
  return JSON.parse(stdout) as Record<string, string>[];
}

async function sign(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const job = JSON.parse(input) as { key: { kid: string; privateJwk: Record<string, unknown> }; requests: { url: string; body: string }[] };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require('@adcp/sdk/signing/client') as typeof import('@adcp/sdk/signing/client');
  const out = job.requests.map(
    (r) => sdk.signWebhook({ method: 'POST', url: r.url, headers: { 'Content-Type': 'application/json' }, body: r.body }, { keyid: job.key.kid, alg: 'ed25519', privateKey: job.key.privateJwk as never }).headers,
  );
  process.stdout.write(JSON.stringify(out));
}

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const job = JSON.parse(input) as { jwks: Record<string, unknown>[]; requests: OracleRequest[] };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const sdk = require('@adcp/sdk/signing/server') as typeof import('@adcp/sdk/signing/server');
  const verify = sdk.createWebhookVerifier({ jwks: new sdk.StaticJwksResolver(job.jwks as never) });
  const out: OracleVerdict[] = [];
  for (const r of job.requests) {
    try {
      const v = await verify(r);
      out.push({ status: 'verified', keyid: v.keyid });
    } catch (err) {
      if (!(err instanceof sdk.WebhookSignatureError)) throw err;
      out.push({ status: 'rejected', code: err.code });
    }
  }
  process.stdout.write(JSON.stringify(out));
}

if (require.main === module && process.argv[2] === 'sign-webhooks') {
  sign().catch((err: unknown) => {
    process.stderr.write(String((err as Error).stack ?? err));
    process.exit(1);
  });
}

if (require.main === module && process.argv[2] === 'verify-webhooks') {
  main().catch((err: unknown) => {
    process.stderr.write(String((err as Error).stack ?? err));
    process.exit(1);
  });
}

