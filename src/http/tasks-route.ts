import type { FastifyInstance } from 'fastify';
import type { App } from '../app';
import { tasks } from '../application/tasks';
import { runTaskConsistently } from '../application/tasks/context';
import { AppError } from '../shared/errors';
import { authenticate } from './auth';
import { sendError } from './errors';
import { publicOrigin } from './well-known';

/**
 * The REST shim for the media-buy tasks: `POST /api/tasks/{task_name}` with the task request as
 * the JSON body; errors are `{error:{code,message,field}}` with the spec's statuses. A request's
 * top-level `context` object is echoed on the response, errors included, as AdCP expects.
 */
export function registerTaskRoutes(fastify: FastifyInstance, app: App): void {
  fastify.post<{ Params: { task: string } }>('/api/tasks/:task', async (req, reply) => {
    const body = req.body ?? {};
    const context = typeof body === 'object' && body && !Array.isArray(body) ? (body as { context?: unknown }).context : undefined;
    const echo = context && typeof context === 'object' && !Array.isArray(context) ? { context } : {};
    try {
      const principal = await authenticate(req, app);
      if (!principal || principal.role !== 'buyer') throw new AppError('UNAUTHENTICATED', 'a Bearer API key with role buyer is required');
      const task = Object.hasOwn(tasks, req.params.task) ? tasks[req.params.task] : undefined;
      if (!task) throw new AppError('NOT_FOUND', `unknown task "${req.params.task}"`);
      if (typeof body !== 'object' || Array.isArray(body)) throw new AppError('INVALID_REQUEST', 'the request body must be a JSON object');
      const result = await runTaskConsistently(task, body, { app, principal, requestId: req.id, origin: publicOrigin(app, req) });
      return reply.send({ ...result, ...echo });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      sendError(reply, err, echo);
      return reply;
    }
  });
}
