import type { FastifyInstance, FastifyReply } from 'fastify';
import type { App } from '../services';
import { revalidatePublisher } from '../application/publisher-revalidation';
import { principalOrChallenge } from './auth';

const tooMany = (reply: FastifyReply, error: string, retryAfter: number) => reply.status(429).header('retry-after', String(retryAfter)).send({ error, retry_after: retryAfter });

/**
 * `POST /api/registry/publisher/{domain}/adagents/revalidate` (spec §4.2): admin only; the live
 * fetch runs now, its verdict and fetch metadata are appended as an event (projections update
 * publishers and authorized agents) and returned. Once per 5 minutes per domain and 30 per admin
 * per hour, counted in the database (shared by instances, kept over restarts). Errors are
 * `{error}` (429 adds `retry_after` and a Retry-After header).
 */
export function registerRevalidateRoute(fastify: FastifyInstance, app: App): void {
  fastify.post<{ Params: { domain: string }; Querystring: { force?: string } }>('/api/registry/publisher/:domain/adagents/revalidate', async (req, reply) => {
    const principal = await principalOrChallenge(req, app);
    if ('challenge' in principal) return reply.status(401).header('www-authenticate', principal.challenge).send({ error: 'Authentication required' });
    if (principal.role !== 'admin') return reply.status(403).send({ error: 'Admin access required' });
    const answer = await revalidatePublisher(app.revalidation, req.params.domain, principal.keyId);
    if (answer.done) return reply.send(answer.result);
    if (answer.retryAfter !== undefined) return tooMany(reply, answer.error, answer.retryAfter);
    return reply.status(answer.status).send({ error: answer.error });
  });
}
