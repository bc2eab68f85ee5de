import type { FastifyInstance } from 'fastify';
import type { App } from '../services';
import { readFeed } from '../application/registry-reads';
import { principalOrChallenge } from './auth';

/**
 * `GET /api/registry/feed?cursor=&limit=&types=` (any valid key): the registry change feed in a
 * stable order. `cursor` is the `event_id` of the last entry read; one that is unknown or older
 * than the retention answers 410 (re-bootstrap from the read endpoints). Errors are `{error}`.
 */
export function registerFeedRoute(fastify: FastifyInstance, app: App): void {
  fastify.get<{ Querystring: Record<string, string | string[] | undefined> }>('/api/registry/feed', async (req, reply) => {
    const principal = await principalOrChallenge(req, app);
    if ('challenge' in principal) return reply.status(401).header('www-authenticate', principal.challenge).send({ error: 'Authentication required' });
    for (const name of ['cursor', 'types', 'limit']) {
      if (Array.isArray(req.query[name])) return reply.status(400).send({ error: `${name} must be provided only once` });
    }
    const answer = await readFeed(app.ports, req.query as { cursor?: string; limit?: string; types?: string });
    return reply.status(answer.status).send(answer.body);
  });
}
