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

if (require.main === module && process.argv[2] === 'verify-webhooks') {
  main().catch((err: unknown) => {
    process.stderr.write(String((err as Error).stack ?? err));
    process.exit(1);
  });
}

