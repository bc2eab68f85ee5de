import http from 'node:http';
import https from 'node:https';
import { getDomain } from 'tldts';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import type { OriginOverrides } from './origin-overrides';
import { inSpan, SpanKind, traceHeaders } from './tracing';

export interface FetchedDocument {
  status: number;
  /** The URL finally answered (after redirects). */
  url: string;
  body: Buffer;
  /** Set when a hop was refused (redirect policy, size, timeout, network). */
  error?: { kind: 'timeout' | 'connection' | 'network'; message: string };
}

export interface DocumentFetchOptions {
  overrides?: OriginOverrides;
  maxBytes: number;
  timeoutMs?: number;
  /** Redirects followed (more answer as the 3xx they are). */
  maxRedirects: number;
  /** Every hop must stay https and on the original URL's registrable domain. */
  sameSite?: boolean;
  accept?: string;
}

const guarded = { http: new RequestFilteringHttpAgent({ keepAlive: true }), https: new RequestFilteringHttpsAgent({ keepAlive: true }) };
const open = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

/**
 * GET of a counterparty document (adagents.json, ads.txt) that reports instead of throwing:
 * the SSRF guard on every hop (connect-time address check; REGISTRY_ORIGIN_OVERRIDES is the only
 * way to loopback), a redirect budget and same-site rule, a byte cap and one deadline for the
 * whole exchange. Status, final URL and bytes are returned even for a non-200.
 */
export async function fetchDocument(url: string, options: DocumentFetchOptions): Promise<FetchedDocument> {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  const site = getDomain(new URL(url).hostname);
  let current = url;
  for (let hop = 0; ; hop++) {
    const hopUrl = current;
    // A client span per hop (tracing on), its traceparent sent along like any traced client's.
    const answer = await inSpan('GET', { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'GET', 'url.full': hopUrl.replace(/[?#].*$/s, '') } }, async (span) => {
      const hop = await fetchOnce(hopUrl, options, deadline);
      span?.setAttributes({ 'http.response.status_code': hop.status, ...(hop.error ? { 'error.type': hop.error.kind } : {}) });
      return hop;
    });
    if (answer.error || answer.status < 300 || answer.status >= 400 || !answer.location || hop >= options.maxRedirects) return answer;
    let next: URL;
    try {
      next = new URL(answer.location, current);
    } catch {
      return { ...answer, error: { kind: 'network', message: 'Redirect with an invalid Location header' } };
    }
    if (options.sameSite && next.protocol !== 'https:') return { ...answer, error: { kind: 'network', message: `Refused non-HTTPS redirect ${current} -> ${next.href}` } };
    if (options.sameSite && getDomain(next.hostname) !== site) return { ...answer, error: { kind: 'network', message: `Refused cross-registrable-domain redirect: ${new URL(current).hostname} -> ${next.hostname}` } };
    current = next.href;
  }
}

function fetchOnce(url: string, options: DocumentFetchOptions, deadline: number): Promise<FetchedDocument & { location?: string }> {
  return new Promise((resolve) => {
    let target = new URL(url);
    const host = target.host;
    const override = options.overrides?.get(target.hostname.toLowerCase());
    if (override) target = new URL(`${override}${target.pathname}${target.search}`);
    else if (target.protocol !== 'https:') return resolve({ status: 0, url, body: Buffer.alloc(0), error: { kind: 'network', message: `Refused non-HTTPS URL ${url}` } });
    const secure = target.protocol === 'https:';
    const agent = override ? (secure ? open.https : open.http) : secure ? guarded.https : guarded.http;
    let settled = false;
    const finish = (v: FetchedDocument & { location?: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(v);
    };
    const refusal = (err: Error & { code?: string }): FetchedDocument => {
      const hostname = new URL(url).hostname;
      // request-filtering-agent refuses private, loopback, link-local and mapped addresses with "… is not allowed".
      if (/not allowed/i.test(err.message)) return { status: 0, url, body: Buffer.alloc(0), error: { kind: 'connection', message: `Refused to connect to ${hostname}: it resolves to a private or reserved address` } };
      const unreachable = ['ENOTFOUND', 'ECONNREFUSED', 'EAI_AGAIN', 'ECONNRESET', 'EHOSTUNREACH'].includes(err.code ?? '');
      return { status: 0, url, body: Buffer.alloc(0), error: unreachable ? { kind: 'connection', message: `Cannot connect to ${hostname}` } : { kind: 'network', message: err.message } };
    };
    let req: http.ClientRequest;
    try {
      req = (secure ? https : http).get(target, { agent, headers: { accept: options.accept ?? 'application/json', 'user-agent': 'adcp-gateway-registry/1.0', ...(override ? { host } : {}), ...traceHeaders() } }, (res) => {
        const status = res.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > options.maxBytes) {
            finish({ status, url, body: Buffer.alloc(0), error: { kind: 'network', message: `Response exceeded ${options.maxBytes} bytes` } });
            req.destroy();
          } else chunks.push(c);
        });
        res.on('end', () => finish({ status, url, body: Buffer.concat(chunks), ...(typeof res.headers.location === 'string' ? { location: res.headers.location } : {}) }));
        res.on('error', (err) => finish({ status, url, body: Buffer.alloc(0), error: { kind: 'network', message: err.message } }));
      });
    } catch (err) {
      // The guard throws synchronously for an address literal it refuses.
      return resolve(refusal(err as Error));
    }
    const timer = setTimeout(() => {
      finish({ status: 0, url, body: Buffer.alloc(0), error: { kind: 'timeout', message: 'Request timed out' } });
      req.destroy();
    }, Math.max(1, deadline - Date.now()));
    req.on('error', (err: NodeJS.ErrnoException) => finish(refusal(err)));
  });
}
