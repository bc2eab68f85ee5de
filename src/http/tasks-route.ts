import type { FastifyInstance } from 'fastify';
import type { App } from '../services';
import { tasks } from '../application/tasks';
import { runTaskConsistently } from '../application/tasks/context';
import { AppError, httpStatusOf } from '../shared/errors';
import type { AnswerCodec } from '../wire/answer-codec';
import { codecFor } from '../wire/codecs';
import { negotiateVersion } from '../wire/version';
import { canonicalRequest } from '../wire/requests';
import { authenticate } from './auth';
import { bearerChallenge, sendError } from './errors';
import { publicOrigin } from './well-known';
import { isObject } from '../shared/objects';
import { withTaskStatus } from './mcp/tools';
import { runTaskInRelease } from './release-task';

type Obj = Record<string, unknown>;

/**
 * The REST shim for the media-buy tasks: `POST /api/tasks/{task_name}` with the task request as
 * the JSON body, in either request shape (the spec's or AdCP 3.0's). Answers are the spec's, with
 * errors as `{error:{code,message,field}}` and the spec's statuses, unless the request names an
 * AdCP version: an `adcp_version` (negotiated as MCP negotiates it, wire/version.ts) or
 * `adcp_major_version: 3` alone (3.0, as before 3.1). Then the negotiated release's codec answers,
 * as over MCP: its answer (with the task `status`) or its error as `adcp_error` + `errors[]`, the
 * version echo when the caller pinned one, and the spec's HTTP statuses; its request rules apply
 * too (3.1: keyed replay of get_products). A request's top-level `context` object is echoed on
 * the response, errors included.
 */
export function registerTaskRoutes(fastify: FastifyInstance, app: App): void {
  fastify.post<{ Params: { task: string } }>('/api/tasks/:task', async (req, reply) => {
    const body = req.body ?? {};
    const context = isObject(body) ? body.context : undefined;
    const echo = isObject(context) ? { context } : {};
    // A version is named by any `adcp_version` (negotiated as over MCP and A2A: one that is not a
    // release string, a number or null included, is refused INVALID_REQUEST in AdCP's shape, never
    // taken for no pin) or by adcp_major_version: 3; any other adcp_major_version alone is an
    // unknown field, ignored as before.
    const adcp = isObject(body) && (body.adcp_version !== undefined || body.adcp_major_version === 3);
    // Before negotiation (or when it fails), errors are in the default release's shape.
    let codec: AnswerCodec = codecFor();
    let envelope: Obj = {};
    try {
      const principal = await authenticate(req, app);
      if (!principal || principal.role !== 'buyer') throw new AppError('UNAUTHENTICATED', 'a Bearer API key with role buyer is required');
      const task = Object.hasOwn(tasks, req.params.task) ? tasks[req.params.task] : undefined;
      if (!task) throw new AppError('NOT_FOUND', `unknown task "${req.params.task}"`);
      if (!isObject(body)) throw new AppError('INVALID_REQUEST', 'the request body must be a JSON object');
      const ctx = { ports: app.ports, principal, requestId: req.id, origin: publicOrigin(app, req), wire: adcp ? ('adcp3' as const) : ('spec' as const) };
      if (!adcp) return reply.send({ ...(await runTaskConsistently(task, canonicalRequest(req.params.task, body), ctx)), ...echo });
      const negotiated = negotiateVersion(body);
      codec = codecFor(negotiated.version);
      envelope = codec.envelope(negotiated);
      // A task this call starts records the release it is answered in (its later answers use it).
      const result = await runTaskInRelease(req.params.task, body, { ...ctx, release: negotiated.version }, negotiated.version);
      const answer = codec.answer(req.params.task, result, { now: app.clock() });
      // A caller without a pin (adcp_major_version: 3) gets the 3.0 answer it always got.
      const body3 = negotiated.pinned ? withTaskStatus(req.params.task, answer) : answer;
      return reply.send({ ...envelope, ...body3, ...(result.replayed === true ? { replayed: true } : {}), ...echo });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      if (!adcp) {
        sendError(reply, err, echo);
        return reply;
      }
      const error = codec.error(req.params.task, body, err);
      if (err.code === 'UNAUTHENTICATED') reply.header('WWW-Authenticate', bearerChallenge(err));
      return reply.status(httpStatusOf[err.code]).send({ adcp_error: error, errors: [error], ...envelope, ...echo });
    }
  });
}
