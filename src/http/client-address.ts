import type { IncomingMessage } from 'node:http';
import proxyAddr from 'proxy-addr';
import type { Config } from '../config';

/**
 * The client address of a request that never reaches Fastify's routing (a WebSocket upgrade),
 * decided by the same TRUST_PROXY rule Fastify applies to `req.ip`: the rate limits and the
 * failed-authentication throttle must count one client under one address on every path.
 */
export function clientAddressOf(trustProxy: Config['trustProxy']): (req: IncomingMessage) => string {
  const trust =
    trustProxy === true
      ? () => true
      : trustProxy === false
        ? () => false
        : typeof trustProxy === 'number'
          ? (_addr: string, i: number) => i < trustProxy
          : proxyAddr.compile(trustProxy.split(',').map((s) => s.trim()));
  return (req) => proxyAddr(req, trust);
}
