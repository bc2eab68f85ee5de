import http from 'node:http';
import https from 'node:https';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';

/**
 * `REGISTRY_ORIGIN_OVERRIDES` (a test seam, DESIGN.md §4): `domain=http://127.0.0.1:8080,…` sends
 * live fetches for those domains to that origin (path and query kept), and only those may reach
 * a private address.
 */
export type OriginOverrides = ReadonlyMap<string, string>;

export function parseOriginOverrides(value: string | undefined): OriginOverrides {
  const out = new Map<string, string>();
  for (const pair of (value ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const [domain, origin] = pair.split('=');
    out.set(domain!.toLowerCase(), origin!.replace(/\/$/, ''));
  }
  return out;
}

export class FetchError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const guarded = { http: new RequestFilteringHttpAgent({ keepAlive: true }), https: new RequestFilteringHttpsAgent({ keepAlive: true }) };
const open = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/**
 * GETs a JSON document from a counterparty: https only, public addresses only (checked at
 * connect time, after DNS), no redirects, a byte cap and a deadline. Errors say what failed
 * without echoing the response.
 */
export function fetchJson(url: string, options: { overrides?: OriginOverrides; maxBytes: number; timeoutMs?: number }): Promise<unknown> {
  let target = new URL(url);
  const host = target.host;
  const override = options.overrides?.get(target.hostname.toLowerCase());
  // The overriding origin still sees the Host asked for, as a virtual host would.
  if (override) target = new URL(`${override}${target.pathname}${target.search}`);
  else if (target.protocol !== 'https:') return Promise.reject(new FetchError(`${url}: only https is fetched`));
  const secure = target.protocol === 'https:';
  const agent = override ? (secure ? open.https : open.http) : secure ? guarded.https : guarded.http;
  return new Promise((resolve, reject) => {
    const req = (secure ? https : http).get(target, { agent, headers: { accept: 'application/json', ...(override ? { host } : {}) }, timeout: options.timeoutMs ?? 10_000 }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return reject(new FetchError(`${url}: HTTP ${res.statusCode}`, res.statusCode));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > options.maxBytes) {
          req.destroy();
          reject(new FetchError(`${url}: larger than ${options.maxBytes} bytes`));
        } else chunks.push(c);
      });
      res.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new FetchError(`${url}: not JSON`));
        }
      });
    });
    // One deadline for the whole fetch (DNS and connect included), besides the idle timeout.
    const deadline = setTimeout(() => req.destroy(new FetchError(`${url}: timed out`)), options.timeoutMs ?? 10_000);
    req.on('close', () => clearTimeout(deadline));
    req.on('timeout', () => req.destroy(new FetchError(`${url}: timed out`)));
    req.on('error', (err) => reject(err instanceof FetchError ? err : new FetchError(/not allowed/i.test(err.message) ? `${url}: refused, not a public address` : `${url}: ${err.message}`)));
  });
}
