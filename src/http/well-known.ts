import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { App } from '../app';

/** The origin buyers reach us at: PUBLIC_URL, else what this request was addressed to. */
export function publicOrigin(app: App, req: FastifyRequest): string {
  return app.config.publicUrl ?? `${req.protocol}://${req.host}`;
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
    return reply.header('cache-control', 'public, max-age=300').send({
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
