import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The gateway's own time for an answer, from its `Server-Timing: app;dur=…` header. */
export function serverMs(res: Response): number {
  const m = /app;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '');
  if (!m) throw new Error(`no Server-Timing on ${res.url} (${res.status})`);
  return Number(m[1]);
}

/** The `RateLimit` header's items by name: what is left and when it resets. */
export function rateLimitState(res: Response): Record<string, { r: number; t: number }> {
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
