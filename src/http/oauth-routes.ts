import type { FastifyInstance } from 'fastify';
import type { App } from '../services';
import { AUTHORIZATION_SERVER_PATHS } from './errors';

/**
 * OAuth discovery and the embedded authorization server (spec §5). The protected-resource
 * document is ours; the authorization server is an Express app from the MCP SDK, handed the raw
 * request: its routes live in their own Fastify scope whose content-type parser leaves the body
 * unread, so the SDK's own parsers (and their limits) see it.
 */
export async function registerOAuthRoutes(fastify: FastifyInstance, app: App): Promise<void> {
  // The registry's REST API and GraphQL are resources of their own (RFC 8707): a token asked for
  // one is refused by the other. MCP's and A2A's documents are registered beside their routes.
  for (const api of ['api', 'graphql'] as const) {
    fastify.get(`/.well-known/oauth-protected-resource/${api}`, async (_req, reply) => {
      const metadata = app.oauth.protectedResourceMetadata(api);
      if (!metadata) return reply.status(503).header('retry-after', '1').send({ error: 'OAuth is not configured yet' });
      return reply.header('cache-control', 'public, max-age=3600').header('access-control-allow-origin', '*').send(metadata);
    });
  }

  await fastify.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));
    for (const url of AUTHORIZATION_SERVER_PATHS) {
      scope.route({
        method: ['GET', 'POST', 'OPTIONS'],
        url,
        handler: async (req, reply) => {
          const server = app.oauth.authorizationServer();
          if ('unavailable' in server) return reply.status(404).send({ error: 'not_found', error_description: server.unavailable });
          reply.hijack();
          server.handler(req.raw, reply.raw);
        },
      });
    }
  });
}
