import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ServedDoc {
  status?: number;
  body?: unknown;
  /** Raw bytes (wins over body). */
  raw?: string | Buffer;
  /** Milliseconds before answering. */
  delayMs?: number;
  headers?: Record<string, string>;
}

/**
 * Loopback origins standing in for publishers and brands (reached through the
 * REGISTRY_ORIGIN_OVERRIDES seam): one server, routed by the Host the gateway asked for.
 * `overrides` is the value for that variable.
 */
export async function startOrigins(docs: Record<string, Record<string, ServedDoc>>) {
  const hits: { host: string; path: string }[] = [];
  const server = http.createServer((req, res) => {
    const host = (req.headers.host ?? '').toLowerCase();
    const path = req.url ?? '/';
    hits.push({ host, path });
    const doc = docs[host]?.[path];
    const send = () => {
      if (!doc) return res.writeHead(404).end();
      const body = doc.raw ?? JSON.stringify(doc.body ?? {});
      res.writeHead(doc.status ?? 200, { 'content-type': 'application/json', ...doc.headers }).end(body);
    };
    if (doc?.delayMs) setTimeout(send, doc.delayMs);
    else send();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    hits,
    overrides: Object.keys(docs).map((d) => `${d}=http://127.0.0.1:${port}`).join(','),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
