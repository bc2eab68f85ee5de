import type { FastifyInstance } from 'fastify';
import type { App } from '../services';
import { tasks } from '../application/tasks';
import { runTaskConsistently } from '../application/tasks/context';
import { AppError, httpStatusOf } from '../shared/errors';
import { codecFor } from '../wire/codecs';
import { adcpErrorFor } from '../wire/adcp3/errors';
import { canonicalRequest } from '../wire/requests';
import { authenticate } from './auth';
import { bearerChallenge, sendError } from './errors';
import { publicOrigin } from './well-known';
import { isObject } from '../shared/objects';

/**
 * The REST shim for the media-buy tasks: `POST /api/tasks/{task_name}` with the task request as
 * the JSON body, in either request shape (the spec's or AdCP 3.0's). Answers are the spec's, with
 * errors as `{error:{code,message,field}}` and the spec's statuses, unless the request carries
 * `adcp_major_version: 3`: then AdCP 3.0's answer (errors as `adcp_error` + `errors[]`, same
 * statuses). A request's top-level `context` object is echoed on the response, errors included.
 */
export function registerTaskRoutes(fastify: FastifyInstance, app: App): void {
  fastify.post<{ Params: { task: string } }>('/api/tasks/:task', async (req, reply) => {
    const body = req.body ?? {};
    const context = isObject(body) ? body.context : undefined;
    const echo = isObject(context) ? { context } : {};
    const adcp3 = isObject(body) && body.adcp_major_version === 3;
    try {
      const principal = await authenticate(req, app);
      if (!principal || principal.role !== 'buyer') throw new AppError('UNAUTHENTICATED', 'a Bearer API key with role buyer is required');
      const task = Object.hasOwn(tasks, req.params.task) ? tasks[req.params.task] : undefined;
      if (!task) throw new AppError('NOT_FOUND', `unknown task "${req.params.task}"`);
      if (!isObject(body)) throw new AppError('INVALID_REQUEST', 'the request body must be a JSON object');
      const ctx = { ports: app.ports, principal, requestId: req.id, origin: publicOrigin(app, req), wire: adcp3 ? ('adcp3' as const) : ('spec' as const) };
      const result = await runTaskConsistently(task, canonicalRequest(req.params.task, body), ctx);
      if (!adcp3) return reply.send({ ...result, ...echo });
      return reply.send({ ...codecFor().answer(req.params.task, result, { now: app.clock() }), ...echo });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      if (!adcp3) {
        sendError(reply, err, echo);
        return reply;
      }
      const error = adcpErrorFor(req.params.task, body, err);
      if (err.code === 'UNAUTHENTICATED') reply.header('WWW-Authenticate', bearerChallenge(err));
      return reply.status(httpStatusOf[err.code]).send({ adcp_error: error, errors: [error], ...echo });
    }
  });
}
