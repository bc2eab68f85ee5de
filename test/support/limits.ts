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
 * 99 % of the samples under 50 ms (never fewer than all but one) and every one under 200 ms; on
 * failure the slowest samples of both series are printed. This 2-CPU VM pauses processes now and
 * then, which no gateway code causes (CI failed such a bound twice on round trips alone while the
 * same code passed the runs around them, and once on a single 142 ms sample of 302 whose next
 * slowest was 25 ms, after a 21-minute parallel phase; the same suite then passed three runs in a
 * row); a gateway that a client can stall fails both by far (the quadratic header check this
 * guards against held /healthz at p50 1,342 ms).
 */
export function expectPrompt(series: string, times: readonly number[], bare: readonly number[]): void {
  const slowest = [...times].sort((a, b) => b - a);
  const allowed = Math.max(1, Math.floor(times.length / 100));
  const shown = slowest.slice(0, allowed + 2).map((t) => Math.round(t * 10) / 10);
  if (!(slowest[0]! < 200 && (slowest[allowed] ?? 0) < 50)) {
    throw new Error(`${series}: ${times.length} samples, the slowest ${shown.join(', ')} ms (at most ${allowed} may pass 50 ms, none 200 ms); the bare server's slowest: ${[...bare].sort((a, b) => b - a).slice(0, 4).map((t) => t.toFixed(1)).join(', ')} ms`);
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
