import type { FastifyInstance } from 'fastify';
import type { App } from '../services';
import { getStoryboard } from '../application/registry-reads';

/** `GET /api/storyboards/{id}` (spec §4.1; ids with `/` arrive URL-encoded). Errors are `{error}`. */
export function registerStoryboardRoutes(fastify: FastifyInstance, app: App): void {
  fastify.get<{ Params: { id: string }; Querystring: { compliance_target?: unknown } }>('/api/storyboards/:id', async (req, reply) => {
    try {
      const target = req.query.compliance_target;
      const answer = await getStoryboard(app.ports, req.params.id, typeof target === 'string' ? target : undefined);
      return reply.status(answer.status).send(answer.body);
    } catch (err) {
      req.log.error({ err }, 'storyboard lookup failed');
      return reply.status(500).send({ error: 'Failed to get storyboard' });
    }
  });
}
