import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ROOMY_LIMITS } from '../support/gateway';

/**
 * The soak (issue 33): one gateway left running under a mixed load, as a long-lived endpoint
 * meets it, in a process whose heap is capped (`--max-old-space-size`), so that anything that
 * grows with the work done kills it. Four clients, one request at a time each: creates over
 * REST, each new buy read by id over GraphQL with the id written into the query text (as simple
 * buyer UIs do, so every read is a new document), `get_products` over MCP, and a graphql-ws
 * subscription opened for 3 s at a time, and a hostile fifth sending a new GraphQL document that
 * fails validation on every request (refusals are cached too). The live heap (after a full collection, asked over the
 * inspector protocol) is read once the gateway has warmed up and again at the end: a bounded
 * process ends where it settled.
 */
export interface SoakOptions {
  /** How long the load runs. */
  durationMs: number;
  /** When the reference reading of the live heap is taken (issue 33: minute 3). */
  settleMs: number;
  /** The gateway's environment (data dir, engines, limits). */
  env: Record<string, string>;
  /** The V8 old-space cap, MB. */
  maxOldSpaceMb?: number;
  /** Progress lines on stderr. */
  verbose?: boolean;
  /** Write a heap snapshot of the gateway here (for Chrome DevTools' Memory tab), under load at `snapshotAtMs`, else at the end. */
  snapshotFile?: string;
  snapshotAtMs?: number;
}

export interface SoakResult {
  /** Whether the gateway was still up and answering at the end. */
  lived: boolean;
  /** Live heap after a full GC, MB: once settled, and at the end. */
  heapSettledMb: number;
  heapEndMb: number;
  rssEndMb: number;
  rssPeakMb: number;
  /** Answers by status (0: the request failed), per client. */
  answers: Record<string, Record<number, number>>;
  /** Messages of unexpected answers (a few, for the report). */
  unexpected: string[];
}

const BIN = path.join(__dirname, '..', '..', '..', 'bin', 'adcp-gateway.js');

export async function soak(options: SoakOptions): Promise<SoakResult> {
  const env = { PATH: process.env.PATH ?? '', APPROVAL_POLICY: 'never', ...ROOMY_LIMITS, ...options.env };
  const key = execFileSync(process.execPath, [BIN, 'keys', 'create', '--org', 'soak', '--role', 'buyer'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const gw = await startInspectable(env, options.maxOldSpaceMb ?? 384);
  const answers: Record<string, Record<number, number>> = {};
  const unexpected: string[] = [];
  const count = (client: string, status: number, detail?: string) => {
    const byStatus = (answers[client] ??= {});
    byStatus[status] = (byStatus[status] ?? 0) + 1;
    if (detail && unexpected.length < 10) unexpected.push(`${client} ${status}: ${detail.slice(0, 300)}`);
  };
  const log = (line: string) => options.verbose && process.stderr.write(`  soak: ${line}\n`);
  const until = Date.now() + options.durationMs;
  const running = () => Date.now() < until && gw.alive();
  const created: string[] = [];
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
  const post = async (client: string, pathName: string, body: unknown, ok: (json: Record<string, unknown>) => boolean, extra: Record<string, string> = {}) => {
    try {
      const res = await fetch(`${gw.url}${pathName}`, { method: 'POST', headers: { ...headers, ...extra }, body: JSON.stringify(body) });
      const text = await res.text();
      const json = res.status === 200 ? (JSON.parse(text) as Record<string, unknown>) : {};
      const expected = res.status === 200 ? ok(json) : res.status === 400 && client.endsWith('(400)');
      count(client, res.status, expected ? undefined : text);
      return json;
    } catch (err) {
      count(client, 0, (err as Error).message);
      return {};
    }
  };

  const creates = async () => {
    for (let i = 0; running(); i++) {
      const json = await post('rest create_media_buy', '/api/tasks/create_media_buy', { ...createMediaBuyBody(), buyer_ref: `soak-${i}` }, (j) => typeof j.media_buy_id === 'string');
      if (typeof json.media_buy_id === 'string') {
        created.push(json.media_buy_id);
        if (created.length > 1000) created.splice(0, 500);
      }
    }
  };
  const reads = async () => {
    for (let i = 0; running(); i++) {
      const id = created[created.length - 1 - (i % Math.max(1, Math.min(created.length, 50)))];
      if (!id) {
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      await post('graphql mediaBuy by id', '/graphql', { query: `{ mediaBuy(id: "${id}") { id status totalBudget } }` }, (j) => !j.errors && !!(j.data as { mediaBuy?: unknown })?.mediaBuy);
    }
  };
  const products = async () => {
    for (let i = 0; running(); i++) {
      await post('mcp get_products', '/mcp', { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'get_products', arguments: { brief: `news and sports video ${i % 100}` } } }, (j) => !j.error && !(j.result as { isError?: boolean })?.isError, { accept: 'application/json, text/event-stream' });
    }
  };
  const invalid = async () => {
    for (let i = 0; running(); i++) {
      await post('graphql invalid documents (400)', '/graphql', { query: `{ mediaBuy(id: "nope-${i}") { id noSuchField } }` }, () => false);
    }
  };
  const subscriptions = async () => {
    while (running()) {
      const client = createClient({ url: `${gw.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${key}` }, retryAttempts: 0, lazy: true });
      let received = 0;
      const outcome = await new Promise<string | undefined>((resolve) => {
        const stop = client.subscribe({ query: 'subscription { mediaBuyUpdated { __typename } }' }, { next: () => void received++, error: (e) => resolve(String(e instanceof Error ? e.message : JSON.stringify(e))), complete: () => resolve(undefined) });
        setTimeout(() => {
          stop();
          resolve(undefined);
        }, 3_000);
      });
      await client.dispose();
      count('graphql-ws mediaBuyUpdated (3 s each)', outcome === undefined ? 200 : 0, outcome);
      if (received === 0 && unexpected.length < 10) unexpected.push('a 3 s subscription received no update while buys were created');
    }
  };

  let heapSettledMb = NaN;
  const settle = (async () => {
    await new Promise((r) => setTimeout(r, options.settleMs));
    if (!gw.alive()) return;
    heapSettledMb = await gw.liveHeapMb();
    log(`live heap at ${Math.round(options.settleMs / 1000)} s: ${heapSettledMb.toFixed(1)} MB, RSS ${gw.rss()?.rss.toFixed(0)} MB`);
  })();
  const underLoad = options.snapshotFile && options.snapshotAtMs !== undefined ? setTimeout(() => void gw.snapshot(options.snapshotFile!).then(() => log(`heap snapshot written to ${options.snapshotFile}`)), options.snapshotAtMs) : undefined;
  const progress = setInterval(() => log(`RSS ${gw.rss()?.rss.toFixed(0)} MB, answers ${JSON.stringify(answers)}`), 30_000);
  try {
    await Promise.all([creates(), reads(), products(), invalid(), subscriptions(), settle]);
  } finally {
    clearInterval(progress);
    clearTimeout(underLoad);
  }
  const lived = gw.alive() && (await fetch(`${gw.url}/healthz`).then((r) => r.ok, () => false));
  const heapEndMb = lived ? await gw.liveHeapMb() : NaN;
  if (lived && options.snapshotFile && options.snapshotAtMs === undefined) await gw.snapshot(options.snapshotFile);
  const rss = gw.rss();
  await gw.stop();
  if (!lived) unexpected.push(`the gateway died: ${gw.stderr().slice(-2000)}`);
  return { lived, heapSettledMb, heapEndMb, rssEndMb: rss?.rss ?? NaN, rssPeakMb: rss?.peak ?? NaN, answers, unexpected };
}

/** A create_media_buy request in the spec's shape (the load adds a buyer_ref per request). */
export function createMediaBuyBody() {
  return {
    brand_manifest: { url: 'https://acme.example' },
    packages: [{ product_id: 'news_display_run_of_site', pricing_option_id: 'cpm_usd_fixed', budget: 1000 }],
    start_time: { type: 'asap' },
    end_time: new Date(Date.now() + 30 * 86_400_000).toISOString(),
  };
}

interface Inspectable {
  url: string;
  child: ChildProcess;
  alive: () => boolean;
  /** The live heap after a full collection, MB (V8's used heap size, asked over the inspector). */
  liveHeapMb: () => Promise<number>;
  snapshot: (file: string) => Promise<void>;
  rss: () => { rss: number; peak: number } | undefined;
  stderr: () => string;
  stop: () => Promise<void>;
}

/** `adcp-gateway serve` with its heap capped and the inspector on a loopback port, once it is ready. */
async function startInspectable(env: Record<string, string>, maxOldSpaceMb: number): Promise<Inspectable> {
  const child = spawn(process.execPath, [`--max-old-space-size=${maxOldSpaceMb}`, '--inspect=127.0.0.1:0', BIN, 'serve'], { env: { ...env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info' }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  let exited = false;
  const exit = new Promise<void>((r) => child.once('exit', () => ((exited = true), r())));
  const { url, inspector } = await new Promise<{ url: string; inspector: string }>((resolve, reject) => {
    let inspector: string | undefined;
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString('utf8');
      if (err.length > 200_000) err = err.slice(-100_000);
      inspector ??= /Debugger listening on (ws:\/\/\S+)/.exec(err)?.[1];
      const m = /"url":"(http:\/\/[^"]+)".*"msg":"adcp-gateway listening"/.exec(err);
      if (m && inspector) resolve({ url: m[1]!, inspector });
    });
    child.once('exit', (code) => reject(new Error(`the soak gateway exited (${code}) before listening:\n${err}`)));
  });
  for (let i = 0; i < 500 && (await fetch(`${url}/readyz`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 20));
  return {
    url,
    child,
    alive: () => !exited,
    liveHeapMb: async () => {
      const usage = await overInspector(inspector, async (call) => {
        await call('HeapProfiler.collectGarbage');
        await call('HeapProfiler.collectGarbage');
        return call('Runtime.getHeapUsage');
      });
      return Number(usage.usedSize) / 1024 / 1024;
    },
    snapshot: (file) => overInspector(inspector, (call, on) => {
      const out = fs.createWriteStream(file);
      on('HeapProfiler.addHeapSnapshotChunk', (params) => out.write(String(params.chunk)));
      return call('HeapProfiler.takeHeapSnapshot').then(() => new Promise<void>((r) => out.end(r)));
    }),
    rss: () => rssOf(child.pid!),
    stderr: () => err,
    stop: async () => {
      if (!exited) child.kill('SIGTERM');
      await exit;
    },
  };
}

/** A session on the gateway's inspector (the DevTools protocol): `call` a method, `on` an event. */
async function overInspector<T>(inspectorUrl: string, use: (call: (method: string) => Promise<Record<string, unknown>>, on: (event: string, listener: (params: Record<string, unknown>) => void) => void) => Promise<T>): Promise<T> {
  const socket = new WebSocket(inspectorUrl, { maxPayload: 1024 * 1024 * 1024 });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  let id = 0;
  const pending = new Map<number, { resolve: (r: Record<string, unknown>) => void; reject: (e: Error) => void }>();
  const listeners = new Map<string, (params: Record<string, unknown>) => void>();
  socket.on('message', (data: WebSocket.RawData) => {
    const message = JSON.parse(data.toString()) as { id?: number; method?: string; params?: Record<string, unknown>; result?: Record<string, unknown>; error?: { message: string } };
    if (message.method) listeners.get(message.method)?.(message.params ?? {});
    const waiting = message.id === undefined ? undefined : pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id!);
    if (message.error) waiting.reject(new Error(message.error.message));
    else waiting.resolve(message.result ?? {});
  });
  const call = (method: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const mine = ++id;
      pending.set(mine, { resolve, reject });
      socket.send(JSON.stringify({ id: mine, method }));
    });
  try {
    return await use(call, (event, listener) => listeners.set(event, listener));
  } finally {
    socket.close();
  }
}

/** VmRSS and VmHWM (peak) of a process, in MB, from /proc (Linux). */
export function rssOf(pid: number): { rss: number; peak: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}
