import type { FastifyInstance } from 'fastify';
import type { App } from '../app';
import { publicOrigin } from './well-known';

/** Webhook bodies above this are refused (413) before any verification work (spec §8). */
const RECEIVER_BODY_LIMIT = 1024 * 1024;

/**
 * `POST /webhooks/{task_type}/{agent_id}/{route_token}`: the buyer-side receiver. Its own
 * encapsulated scope parses only `application/json`, as raw bytes (the signature covers them;
 * nothing may re-serialize them first): another content type is 415 and a larger body 413, both
 * before verification. The URL is opaque to senders; correlation is by the envelope.
 */
export async function registerReceiverRoutes(fastify: FastifyInstance, app: App): Promise<void> {
  await fastify.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: RECEIVER_BODY_LIMIT }, (_req, body, done) => done(null, body));
    scope.post<{ Params: { task_type: string; agent_id: string; route_token: string } }>('/webhooks/:task_type/:agent_id/:route_token', async (req, reply) => {
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/json' || !Buffer.isBuffer(req.body)) {
        return reply.status(415).send({ error: { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'webhooks must be application/json' } });
      }
      const answer = await app.receiver.receive({
        method: req.method,
        url: `${publicOrigin(app, req)}${req.url}`,
        headers: req.headers as Record<string, string | string[] | undefined>,
        body: req.body,
        agentId: req.params.agent_id,
        routeToken: req.params.route_token,
      });
      return reply.status(answer.status).headers(answer.headers ?? {}).send(answer.body);
    });
  });
}
