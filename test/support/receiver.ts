import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  method: string;
  url: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  json: Record<string, any>;
  answered: number;
  /** Arrival time (ms since the epoch). */
  at: number;
}

/**
 * A buyer's webhook endpoint on 127.0.0.1 that records every request (raw body included) and
 * answers with whatever `respond` decides (default 200).
 */
export async function startReceiver(respond: (w: Omit<ReceivedWebhook, 'answered' | 'at'>, seen: ReceivedWebhook[]) => number = () => 200) {
  const received: ReceivedWebhook[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v)]));
      const base = { method: req.method!, url: `${origin}${req.url}`, path: req.url!, headers, body, json: safeJson(body) };
      const status = respond(base, received);
      received.push({ ...base, answered: status, at: Date.now() });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function safeJson(s: string): Record<string, any> {
  try {
    return JSON.parse(s) as Record<string, any>;
  } catch {
    return {};
  }
}
