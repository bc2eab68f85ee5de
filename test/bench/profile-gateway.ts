import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { startGateway } from '../../src/main';
import { issueApiKey } from '../../src/application/api-keys';
import { ROOMY_LIMITS } from '../support/gateway';
import { printProfileSummary } from './cpu-profile';
import { MEDIA_BUY_TYPED, MEDIA_BUYS_JSON, mainThreadCpuSeconds, runLoad } from './run';

/**
 * Where a request path's time goes, for the create_media_buy and graphql_media_buy_by_id rows:
 * `node --cpu-prof --cpu-prof-dir=<dir> dist/test/bench/profile-gateway.js create|rest|mcp|graphql [count]`
 * starts a gateway in this process, loads it with the bench's own load generator (16 undici
 * clients in a worker thread; `create` sends the create_media_buy_rest_sqlite row's body, `rest`
 * and `mcp` the MCP-vs-REST row's create with an account and a fresh idempotency_key each;
 * `graphql` one buy by id through the JSON field, `graphql-typed` the same buy's typed fields) and
 * prints the main thread's CPU per request; then
 * `node dist/test/bench/profile-gateway.js summary <main thread's .cpuprofile> [self|inclusive]`
 * prints the top functions.
 */
async function run(what: string, count: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-profile-'));
  // RESOURCE_LIMITS=off in the environment profiles the same path without the limits (what they cost).
  const limits = process.env.RESOURCE_LIMITS === 'off' ? { RESOURCE_LIMITS: 'off' } : ROOMY_LIMITS;
  const gw = await startGateway(loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: dir, APPROVAL_POLICY: 'never', ...limits }));
  try {
    const key = (await issueApiKey(gw.app.store, { org: 'bench', role: 'buyer' }, { now: new Date().toISOString() })).key;
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const account = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
    const packages = [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }];
    const end_time = new Date(Date.now() + 30 * 86_400_000).toISOString();
    await fetch(`${gw.url}/api/tasks/sync_accounts`, { method: 'POST', headers, body: JSON.stringify({ accounts: [account], idempotency_key: 'profile-sync-accounts-0001' }) });
    const common = { url: gw.url, key, concurrency: 16, refuse: what.startsWith('graphql') ? '"errors"' : '"isError":true' };
    let job: Pick<Parameters<typeof runLoad>[0], 'path' | 'body' | 'keyed' | 'bodies' | 'mcp'>;
    if (what === 'create') {
      job = { path: '/api/tasks/create_media_buy', body: { brand_manifest: { url: 'https://acme.example' }, packages, start_time: { type: 'asap' }, end_time } };
    } else if (what === 'rest') {
      job = { path: '/api/tasks/create_media_buy', keyed: true, body: { account, brand_manifest: { url: 'https://acme-outdoor.com' }, packages, start_time: { type: 'asap' }, end_time } };
    } else if (what === 'mcp') {
      job = { path: '/mcp', mcp: { tool: 'create_media_buy', args: { account, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time, packages } } };
    } else if (what === 'graphql' || what === 'graphql-typed') {
      const ids: string[] = [];
      for (let i = 0; i < 500; i++) {
        const res = await fetch(`${gw.url}/api/tasks/create_media_buy`, { method: 'POST', headers, body: JSON.stringify({ buyer_ref: `profile-${i}`, brand_manifest: { url: 'https://acme.example' }, packages, start_time: { type: 'asap' }, end_time }) });
        ids.push(((await res.json()) as { media_buy_id: string }).media_buy_id);
      }
      await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
      const bodies = what === 'graphql' ? ids.map((id) => JSON.stringify({ query: MEDIA_BUYS_JSON, variables: { request: { media_buy_ids: [id] } } })) : ids.map((id) => JSON.stringify({ query: MEDIA_BUY_TYPED, variables: { id } }));
      job = { path: '/graphql', bodies };
    } else {
      throw new Error(`profile-gateway: no path "${what}" (create, rest, mcp, graphql, graphql-typed)`);
    }
    // runLoad rejects if any request fails (every 20th answer is read for an error).
    await runLoad({ ...common, ...job, count: 2000, prefix: 'profile-warm-' });
    const before = mainThreadCpuSeconds();
    await runLoad({ ...common, ...job, count, prefix: 'profile-measured-' });
    const perRequest = ((mainThreadCpuSeconds() - before) * 1e6) / count;
    process.stdout.write(`${what}: ${count} requests, ${perRequest.toFixed(1)} us of main-thread CPU each\n`);
  } finally {
    await gw.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const [what = 'rest', arg, mode] = process.argv.slice(2);
if (what === 'summary') printProfileSummary(arg!, mode === 'inclusive' ? 'inclusive' : 'self', 30);
else
  run(what, Number(arg ?? '10000')).then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
