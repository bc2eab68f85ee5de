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

/**
 * The MCP SDK's OAuth client (what real AdCP/MCP clients run) against `serverUrl`: discovery,
 * dynamic registration, PKCE, our sign-in form posted with `apiKey`, the code exchange and a
 * refresh. Answers the tokens it ended up with, and the URLs it followed.
 */
export async function mcpClientOAuth(serverUrl: string, apiKey: string): Promise<{ first: string; refreshed: string; authorizationUrl: string; resource: string | null }> {
  const child = run(process.execPath, [__filename, 'mcp-oauth'], { maxBuffer: 1024 * 1024 });
  child.child.stdin!.end(JSON.stringify({ serverUrl, apiKey }));
  const { stdout } = await child;
  return JSON.parse(stdout) as { first: string; refreshed: string; authorizationUrl: string; resource: string | null };
}

async function mcpOAuth(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const { serverUrl, apiKey } = JSON.parse(input) as { serverUrl: string; apiKey: string };
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { auth } = require('@modelcontextprotocol/sdk/client/auth.js') as typeof import('@modelcontextprotocol/sdk/client/auth.js');
  const state: { client?: unknown; tokens?: { access_token: string; refresh_token?: string }; verifier?: string; code?: string; authorizationUrl?: string } = {};
  const provider = {
    redirectUrl: 'http://127.0.0.1:1/callback',
    clientMetadata: { client_name: 'mcp-sdk-oracle', redirect_uris: ['http://127.0.0.1:1/callback'], token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'] },
    clientInformation: () => state.client as never,
    saveClientInformation: (info: unknown) => void (state.client = info),
    tokens: () => state.tokens as never,
    saveTokens: (tokens: { access_token: string; refresh_token?: string }) => void (state.tokens = tokens),
    saveCodeVerifier: (v: string) => void (state.verifier = v),
    codeVerifier: () => state.verifier!,
    // The browser's part: open the authorization URL, sign in, read the code off the redirect.
    redirectToAuthorization: async (url: URL) => {
      state.authorizationUrl = url.href;
      const page = await (await fetch(url)).text();
      const request = /name="request" value="([^"]+)"/.exec(page)?.[1];
      if (!request) throw new Error(`no sign-in form at ${url.href}`);
      const answer = await fetch(new URL('/oauth/login', url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ request, api_key: apiKey, decision: 'approve' }).toString(),
        redirect: 'manual',
      });
      state.code = new URL(answer.headers.get('location')!).searchParams.get('code') ?? undefined;
    },
  };
  if ((await auth(provider as never, { serverUrl })) !== 'REDIRECT') throw new Error('expected a redirect to sign in');
  if ((await auth(provider as never, { serverUrl, authorizationCode: state.code! })) !== 'AUTHORIZED') throw new Error('the code exchange failed');
  const first = state.tokens!.access_token;
  // With tokens on hand, auth() refreshes them.
  if ((await auth(provider as never, { serverUrl })) !== 'AUTHORIZED') throw new Error('the refresh failed');
  const resource = new URL(state.authorizationUrl!).searchParams.get('resource');
  process.stdout.write(JSON.stringify({ first, refreshed: state.tokens!.access_token, authorizationUrl: state.authorizationUrl, resource }));
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

if (require.main === module && process.argv[2] === 'mcp-oauth') {
  mcpOAuth().catch((err: unknown) => {
    process.stderr.write(String((err as Error).stack ?? err));
    process.exit(1);
  });
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

