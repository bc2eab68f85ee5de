import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../services';
import { errorSenderFor } from './errors';
import { rateLimitHeaderValues } from '../limits/rate-limit-headers';
import { rateLimited } from './request-limits';
import type { BudgetVerdict, SharedBudgets } from '../limits/shared-budgets';
import { publicOrigin } from './well-known';
import { abandonment, claimAnswer } from './work-caps';
import { addressBudgetKey } from '../limits/address-key';

/** Webhook bodies above this are refused (413) before any verification work (spec §8). */
const RECEIVER_BODY_LIMIT = 1024 * 1024;

/**
 * `POST /webhooks/{task_type}/{agent_id}/{route_token}`: the buyer-side receiver. Its own
 * encapsulated scope parses only `application/json`, as raw bytes (the signature covers them;
 * nothing may re-serialize them first): another content type is 415 and a larger body 413, both
 * before verification. The URL is opaque to senders; correlation is by the envelope. With the
 * limits on, each sender address has WEBHOOK_REQUESTS_PER_MINUTE, counted before anything else.
 */
export async function registerReceiverRoutes(fastify: FastifyInstance, app: App): Promise<void> {
  await fastify.register(async (scope) => {
    if (app.budgets && app.config.limits) scope.addHook('onRequest', senderRate(app.budgets, app.config.limits.webhookRequestsPerMinute));
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
        // A webhook whose request was answered meanwhile (its time ran out) or whose sender left
        // is not worked on further, and never stored.
        signal: abandonment(reply),
        claim: () => claimAnswer(req, reply),
      });
      return reply.status(answer.status).headers(answer.headers ?? {}).send(answer.body);
    });
  });
}

/** Per-address bucket names, made once per address (see request-limits: a name built per request is hashed again per lookup). */
const buckets = new Map<string, string>();

/**
 * Requests per sender address per minute, shared by the instances (SharedBudgets), before the
 * body is read: 429 with Retry-After and the `RateLimit` headers, in the receiver's error shape.
 * Callback style, like the other limits: the budget nearly always answers at once.
 */
function senderRate(budgets: SharedBudgets, perMinute: number) {
  return (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    let bucket = buckets.get(req.ip);
    if (bucket === undefined) {
      if (buckets.size >= 10_000) buckets.clear();
      // An IPv6 sender counted by its /64 (address-key.ts).
      buckets.set(req.ip, (bucket = `webhooks:ip:${addressBudgetKey(req.ip)}`));
    }
    const decide = (verdict: BudgetVerdict) => {
      const [policy, state] = rateLimitHeaderValues('webhooks', verdict);
      reply.header('ratelimit-policy', policy).header('ratelimit', state);
      if (verdict.allowed) return done();
      errorSenderFor(req.url)(reply, rateLimited(`webhook rate limit reached (${verdict.limit} per ${verdict.windowSeconds} s from one address); try again in ${verdict.resetSeconds} s`, verdict));
    };
    const pending = budgets.take(bucket, 1, perMinute, 60);
    if (pending instanceof Promise) pending.then(decide, done);
    else decide(pending);
  };
}
