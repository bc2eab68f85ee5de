import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The gateway's own time for an answer, from its `Server-Timing: app;dur=…` header. */
export function serverMs(res: Response): number {
  const m = /app;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '');
  if (!m) throw new Error(`no Server-Timing on ${res.url} (${res.status})`);
  return Number(m[1]);
}

/** The `RateLimit` header's items by name: what is left and when it resets. */
export function rateLimitState(res: { headers: Headers }): Record<string, { r: number; t: number }> {
  const out: Record<string, { r: number; t: number }> = {};
  for (const m of (res.headers.get('ratelimit') ?? '').matchAll(/"([^"]+)";r=(\d+);t=(\d+)/g)) out[m[1]!] = { r: Number(m[2]), t: Number(m[3]) };
  return out;
}

export const post = (url: string, body: unknown, key?: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: typeof body === 'string' ? body : JSON.stringify(body) });

/** The probe that found issue 15: 15,000 aliases of the product search in one ~800 KB document. */
export const HOSTILE = JSON.stringify({ query: `{ ${Array.from({ length: 15_000 }, (_, i) => `a${i}: products(brief: "video sports") { productId }`).join(' ')} }` });

const HOSTILE_SCRIPT = `
const [url, key, ms, connections] = process.argv.slice(1);
const body = Buffer.from(JSON.stringify({ query: '{ ' + Array.from({ length: 15000 }, (_, i) => 'a' + i + ': products(brief: "video sports") { productId }').join(' ') + ' }' }));
const until = Date.now() + Number(ms);
const statuses = [], serverMs = [];
const loop = async () => {
  while (Date.now() < until) {
    const res = await fetch(url + '/graphql', { method: 'POST', headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' }, body });
    statuses.push(res.status);
    serverMs.push(Number((/app;dur=([0-9.]+)/.exec(res.headers.get('server-timing') || '') || [])[1]));
    await res.arrayBuffer();
  }
};
Promise.all(Array.from({ length: Number(connections) }, loop)).then(() => process.stdout.write(JSON.stringify({ statuses, serverMs })));
`;

/** Sends HOSTILE (built the same way there) to /graphql in a loop from a process of its own; resolves with what it saw. */
export async function hostileLoop(url: string, key: string, ms: number, connections: number): Promise<{ statuses: number[]; serverMs: number[] }> {
  const { stdout } = await run(process.execPath, ['-e', HOSTILE_SCRIPT, url, key, String(ms), String(connections)], { maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(stdout) as { statuses: number[]; serverMs: number[] };
}

/** A round trip to `url` from this process, timed. */
export async function roundTrip(url: string): Promise<{ ms: number; status: number }> {
  const t = performance.now();
  const res = await fetch(url);
  await res.text();
  return { ms: performance.now() - t, status: res.status };
}

/**
 * A bare HTTP server in a process of its own, answering what /healthz answers; it stops itself
 * after `lifetimeMs`. Asked at the same moment as the gateway, it tells a pause of the whole
 * machine (or of the test process) from a stall of the gateway.
 */
export async function spawnControl(lifetimeMs = 60_000): Promise<{ url: string; child: ChildProcess }> {
  const script = `const s = require('node:http').createServer((q, r) => { r.setHeader('content-type', 'application/json'); r.end('{"status":"ok"}'); });
s.listen(0, '127.0.0.1', () => process.stdout.write(String(s.address().port) + '\\n'));
setTimeout(() => process.exit(0), ${lifetimeMs});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()));
    child.once('exit', (code) => reject(new Error(`control server exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}/healthz`, child };
}

/**
 * 98 % of the samples under 50 ms (never fewer than all but two) and every one under 500 ms; on
 * failure the slowest samples of both series are printed. The samples are the gateway's round trip
 * beyond the bare server's, so a pause of the whole machine cancels out, but a pause of the test
 * process (which hosts the gateway and the hostile senders: a major GC of their shared heap) does
 * not. Such single pauses were seen on this 2-CPU VM on the build before and after the same change
 * alike (2026-11-27, one run in three: a lone 341 ms or 227 ms sample, or three samples of 53-69 ms
 * among 296, the rest under 25 ms), and CI failed the earlier bounds (100 ms, then 200 ms) the same
 * way while the runs around them passed. A gateway that a client can stall fails both bounds by far:
 * the quadratic header check this guards against held /healthz at p50 1,342 ms.
 */
export function expectPrompt(series: string, times: readonly number[], bare: readonly number[]): void {
  const slowest = [...times].sort((a, b) => b - a);
  const allowed = Math.max(2, Math.floor(times.length / 50));
  const shown = slowest.slice(0, allowed + 2).map((t) => Math.round(t * 10) / 10);
  if (!(slowest[0]! < 500 && (slowest[allowed] ?? 0) < 50)) {
    throw new Error(`${series}: ${times.length} samples, the slowest ${shown.join(', ')} ms (at most ${allowed} may pass 50 ms, none 500 ms); the bare server's slowest: ${[...bare].sort((a, b) => b - a).slice(0, 4).map((t) => t.toFixed(1)).join(', ')} ms`);
  }
}

/**
 * The gateway's /healthz and a bare server's answer, asked at the same moment every 25 ms while
 * `going()` holds: a pause of the whole machine (or of this process) delays both, a gateway
 * stalled by a hostile client only its own. Each sample is the gateway's round trip beyond the
 * bare server's (`excess`); the bare ones come too, for a failure's report.
 */
export async function sampleHealthz(gatewayUrl: string, controlUrl: string, going: () => boolean): Promise<{ excess: number[]; bare: number[] }> {
  const excess: number[] = [];
  const bare: number[] = [];
  while (going()) {
    const [g, b] = await Promise.all([roundTrip(`${gatewayUrl}/healthz`), roundTrip(controlUrl)]);
    if (g.status !== 200) throw new Error(`/healthz answered ${g.status}`);
    excess.push(Math.max(0, g.ms - b.ms));
    bare.push(b.ms);
    await new Promise((r) => setTimeout(r, 25));
  }
  return { excess, bare };
}

/**
 * Waits, when less than `needMs` is left of the current fixed window of `windowSeconds`, until the
 * next one starts: the rate limits count in windows that start on multiples of their length since
 * the epoch (src/limits/rate-limit.ts), so a test that spends a budget to its end would see it
 * reset halfway across a boundary (and a refusal it expects never come).
 */
export async function freshBudgetWindow(needMs = 15_000, windowSeconds = 60): Promise<void> {
  const left = windowSeconds * 1000 - (Date.now() % (windowSeconds * 1000));
  if (left < needMs) await new Promise((r) => setTimeout(r, left + 50));
}
