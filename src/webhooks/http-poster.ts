import http from 'node:http';
import https from 'node:https';
import { RequestFilteringHttpAgent, RequestFilteringHttpsAgent } from 'request-filtering-agent';
import type { AttemptOutcome } from '../domain/webhook/webhook';
import { inSpan, SpanKind, traceHeaders, tracingActive } from '../shared/tracing';

export interface PosterOptions {
  /** ALLOW_PRIVATE_WEBHOOK_URLS: the test seam that lets deliveries reach loopback. */
  allowPrivate: boolean;
  /** Whole-attempt deadline (connect, send, response headers). */
  timeoutMs?: number;
  /** Hears every attempt's outcome (/metrics counts them). */
  onOutcome?: (outcome: AttemptOutcome) => void;
}

/** Seconds from a Retry-After header (delta-seconds or HTTP-date), if it parses. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/**
 * POSTs webhook bodies over keep-alive connections. The agents refuse private, loopback and
 * link-local addresses at connect time (after DNS, so a rebinding name is caught too); redirects
 * are never followed (a redirect is a non-2xx answer); the response body is drained unread.
 */
export class WebhookPoster {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly timeoutMs: number;
  private readonly onOutcome: (outcome: AttemptOutcome) => void;

  constructor(options: PosterOptions) {
    this.onOutcome = options.onOutcome ?? (() => {});
    const filter = { allowPrivateIPAddress: options.allowPrivate, keepAlive: true, maxSockets: 64 };
    this.httpAgent = new RequestFilteringHttpAgent(filter);
    this.httpsAgent = new RequestFilteringHttpsAgent(filter);
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /**
   * One attempt. With tracing on it is a client span, and the receiver gets its `traceparent` (a
   * header no signature covers, so adding it changes no verdict).
   */
  post(url: string, headers: Record<string, string>, body: Buffer): Promise<AttemptOutcome> {
    if (!tracingActive()) return this.send(url, headers, body).then(this.observed);
    return inSpan('webhook POST', { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'POST', ...serverOf(url) } }, async (span) => {
      const outcome = this.observed(await this.send(url, { ...headers, ...traceHeaders() }, body));
      span?.setAttributes({ 'adcp.webhook.outcome': outcome.status, ...(outcome.http_status_code !== null ? { 'http.response.status_code': outcome.http_status_code } : {}) });
      return outcome;
    });
  }

  private readonly observed = (outcome: AttemptOutcome): AttemptOutcome => {
    this.onOutcome(outcome);
    return outcome;
  };

  private send(url: string, headers: Record<string, string>, body: Buffer): Promise<AttemptOutcome> {
    const started = Date.now();
    return new Promise<AttemptOutcome>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const done = (o: AttemptOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(o);
      };
      const failed = (err: NodeJS.ErrnoException) => {
        // request-filtering-agent refuses a private address with "… is not allowed" errors.
        const blocked = /not allowed/i.test(err.message);
        done({
          status: 'connection_error',
          http_status_code: null,
          error_message: (blocked ? 'refused: the URL resolves to a non-public address' : `${err.code ?? 'error'}: ${err.message}`).slice(0, 500),
          response_time_ms: null,
          ...(blocked ? { terminal: true } : {}),
        });
      };
      const onResponse = (res: http.IncomingMessage) => {
        res.resume();
        const code = res.statusCode ?? 0;
        const ok = code >= 200 && code < 300;
        const retryAfter = parseRetryAfter(res.headers['retry-after']);
        done({
          status: ok ? 'success' : 'failed',
          http_status_code: code,
          error_message: ok ? null : `HTTP ${code}${res.statusMessage ? ` ${res.statusMessage}` : ''}`.slice(0, 500),
          response_time_ms: Date.now() - started,
          ...(retryAfter !== undefined ? { retry_after_seconds: retryAfter } : {}),
        });
      };
      let req: http.ClientRequest;
      try {
        const target = new URL(url);
        const secure = target.protocol === 'https:';
        const options = {
          method: 'POST',
          agent: secure ? this.httpsAgent : this.httpAgent,
          headers: { ...headers, 'content-length': String(body.length), 'user-agent': 'adcp-gateway-webhooks' },
        };
        req = secure ? https.request(target, options, onResponse) : http.request(target, options, onResponse);
      } catch (err) {
        // A bad URL, or an IP literal in a private range: refused before any socket exists.
        return failed(err as NodeJS.ErrnoException);
      }
      timer = setTimeout(() => {
        done({ status: 'timeout', http_status_code: null, error_message: `no response within ${this.timeoutMs} ms`, response_time_ms: null });
        req.destroy();
      }, this.timeoutMs);
      req.on('error', failed);
      req.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/**
 * Where a webhook goes, as span attributes: the receiver's scheme, host and port, never its path or
 * query, which routinely carry the buyer's routing token (a receiver's `/webhooks/…/<token>`).
 */
function serverOf(url: string): Record<string, string | number> {
  try {
    const u = new URL(url);
    return { 'url.scheme': u.protocol.replace(/:$/, ''), 'server.address': u.hostname, ...(u.port ? { 'server.port': Number(u.port) } : {}) };
  } catch {
    return {};
  }
}
