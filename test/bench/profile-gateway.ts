import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { loadConfig } from '../../src/config';
import { startGateway } from '../../src/main';
import { issueApiKey } from '../../src/application/api-keys';
import { ROOMY_LIMITS } from '../support/gateway';
import { printProfileSummary } from './cpu-profile';

/**
 * Where a request path's time goes, for the create_media_buy and graphql_media_buy_by_id rows:
 * `node --cpu-prof --cpu-prof-dir=<dir> dist/test/bench/profile-gateway.js rest|mcp|graphql [count]`
 * starts a gateway in this process, loads it as the bench does (16 undici clients in a worker
 * thread; `rest` and `mcp` send the same create with an account and a fresh idempotency_key) and
 * prints the main thread's CPU per request; then
 * `node dist/test/bench/profile-gateway.js summary <main thread's .cpuprofile> [self|inclusive]`
 * prints the top functions.
 */
const LOAD = `
const { parentPort, workerData } = require('node:worker_threads');
const { Pool } = require(workerData.undici);
const pool = new Pool(workerData.url, { connections: 16, pipelining: 1 });
const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer ' + workerData.key };
(async () => {
  let next = 0, failed = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < workerData.count) {
      const i = next++;
      const body = workerData.bodies[i % workerData.bodies.length].replace('KEY', workerData.prefix + String(i).padStart(12, '0'));
      const res = await pool.request({ path: workerData.path, method: 'POST', headers, body });
      const text = await res.body.text();
      if (res.statusCode !== 200 || text.includes('"isError":true') || text.includes('"errors"')) failed++;
    }
  }));
  parentPort.postMessage(failed);
  await pool.close();
})();`;

function load(job: { url: string; key: string; path: string; bodies: string[]; count: number; prefix: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(LOAD, { eval: true, workerData: { undici: require.resolve('undici'), ...job } });
    worker.once('message', (failed: number) => void worker.terminate().then(() => resolve(failed)));
    worker.once('error', reject);
  });
}

const mainThreadCpuNs = () => Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);

async function run(what: string, count: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'adcp-profile-'));
  const gw = await startGateway(loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: dir, APPROVAL_POLICY: 'never', ...ROOMY_LIMITS }));
  try {
    const key = (await issueApiKey(gw.app.store, { org: 'bench', role: 'buyer' }, { now: new Date().toISOString() })).key;
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const account = { brand: { domain: 'acme-outdoor.com' }, operator: 'pinnacle-media.com' };
    const packages = [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }];
    const end_time = new Date(Date.now() + 30 * 86_400_000).toISOString();
    await fetch(`${gw.url}/api/tasks/sync_accounts`, { method: 'POST', headers, body: JSON.stringify({ accounts: [account], idempotency_key: 'profile-sync-accounts-0001' }) });
    let job: { path: string; bodies: string[] };
    if (what === 'rest') {
      job = { path: '/api/tasks/create_media_buy', bodies: [JSON.stringify({ account, brand_manifest: { url: 'https://acme-outdoor.com' }, packages, start_time: { type: 'asap' }, end_time, idempotency_key: 'KEY' })] };
    } else if (what === 'mcp') {
      const args = { account, brand: { domain: 'acme-outdoor.com' }, start_time: 'asap', end_time, packages, idempotency_key: 'KEY' };
      job = { path: '/mcp', bodies: [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_media_buy', arguments: args } })] };
    } else if (what === 'graphql') {
      const ids: string[] = [];
      for (let i = 0; i < 500; i++) {
        const res = await fetch(`${gw.url}/api/tasks/create_media_buy`, { method: 'POST', headers, body: JSON.stringify({ buyer_ref: `profile-${i}`, brand_manifest: { url: 'https://acme.example' }, packages, start_time: { type: 'asap' }, end_time }) });
        ids.push(((await res.json()) as { media_buy_id: string }).media_buy_id);
      }
      await gw.app.projections.waitFor(gw.app.store.appendedUpTo());
      const query = 'query Buy($request: JSONObject) { mediaBuys(request: $request) }';
      job = { path: '/graphql', bodies: ids.map((id) => JSON.stringify({ query, variables: { request: { media_buy_ids: [id] } } })) };
    } else {
      throw new Error(`profile-gateway: no path "${what}" (rest, mcp, graphql)`);
    }
    const warm = await load({ url: gw.url, key, count: 2000, prefix: 'profile-warm-', ...job });
    const before = mainThreadCpuNs();
    const failed = await load({ url: gw.url, key, count, prefix: 'profile-measured-', ...job });
    const perRequest = (mainThreadCpuNs() - before) / 1000 / count;
    if (warm + failed > 0) throw new Error(`${warm + failed} requests failed`);
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
