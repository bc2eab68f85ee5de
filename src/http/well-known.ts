import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../services';

/**
 * A Host header a URL of ours may be built from: a DNS name, an IPv4 address or a bracketed IPv6
 * one, and a port. Anything else (a path, a quote, a space, credentials) is not a host at all.
 */
const HOST = /^(?:\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?)(?::(\d{1,5}))?$/i;

/**
 * The origin a request was addressed to: its Host when that is a syntactically valid host[:port],
 * else the address it actually reached (the socket's own end), so no URL is ever made of a Host
 * that is not one.
 */
export function requestOrigin(protocol: string, host: string | undefined, socket: Socket): string {
  const scheme = protocol.replace(/:$/, '');
  const fromHost = host === undefined ? null : originOfHost(scheme, host);
  if (fromHost !== null) return fromHost;
  const address = (socket.localAddress ?? '127.0.0.1').replace(/^::ffff:(?=\d+\.)/, '');
  return new URL(`${scheme}://${address.includes(':') ? `[${address}]` : address}:${socket.localPort ?? 80}`).origin;
}

// Host headers seen, and the origin each makes (null: not a host). Every GraphQL context and task
// asks for its origin, and checking a Host (a regex, URL.canParse, new URL) took ~5 % of a GraphQL
// read; clients send one or two Hosts. Bounded: a client may send any text.
const hostOrigins = new Map<string, string | null>();

function originOfHost(scheme: string, host: string): string | null {
  const url = `${scheme}://${host}`;
  let origin = hostOrigins.get(url);
  if (origin === undefined) {
    const m = host.length <= 260 ? HOST.exec(host) : null;
    origin = m && (m[1] === undefined || Number(m[1]) <= 65_535) && URL.canParse(url) ? new URL(url).origin : null;
    if (hostOrigins.size >= 256) hostOrigins.clear();
    hostOrigins.set(url, origin);
  }
  return origin;
}

/** The origin buyers reach us at: PUBLIC_URL, else what this request was addressed to. */
export function publicOrigin(app: App, req: FastifyRequest): string {
  return app.config.publicUrl ?? requestOrigin(req.protocol, req.host, req.socket);
}

/**
 * Cache headers for a document built from {@link publicOrigin}. With PUBLIC_URL it is the same for
 * everyone: public. Without, its URLs come from the request's Host, so a shared cache must not
 * keep it (one client's Host would be served to all) and any cache keys it by Host.
 */
export function originCaching(app: App, reply: FastifyReply, maxAgeSeconds: number): FastifyReply {
  if (app.config.publicUrl) return reply.header('cache-control', `public, max-age=${maxAgeSeconds}`);
  return reply.header('cache-control', `private, max-age=${maxAgeSeconds}`).header('vary', 'Host');
}

/**
 * Key discovery for webhook verifiers: the JWK set, and the operator's brand.json whose
 * `agents[]` entry for this sales agent names it as `jwks_uri` (AdCP security, "Webhook
 * callbacks"). Both are public and cacheable for a few minutes, which keeps a rotation visible
 * well inside the verifiers' refetch window.
 */
export function registerWellKnownRoutes(fastify: FastifyInstance, app: App): void {
  fastify.get('/.well-known/jwks.json', async (_req, reply) =>
    reply.header('cache-control', 'public, max-age=300').type('application/jwk-set+json').send(app.signingKeys.publicJwks()),
  );
  fastify.get('/.well-known/brand.json', async (req, reply) => {
    const origin = publicOrigin(app, req);
    return originCaching(app, reply, 300).send({
      version: '1.0',
      agents: [
        {
          type: 'sales',
          url: `${origin}/mcp`,
          id: 'adcp_gateway',
          description: 'adcp-gateway sales agent (media-buy tasks); signs webhooks with the keys at jwks_uri',
          jwks_uri: `${origin}/.well-known/jwks.json`,
        },
      ],
      last_updated: new Date().toISOString(),
    });
  });
}
