import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../services';
import type { Principal } from '../application/api-keys';
import type { ResourceLimits } from '../config';
import { AppError } from '../shared/errors';
import { authenticate } from './auth';
import { errorSenderFor } from './errors';
import type { BudgetVerdict, SharedBudgets } from '../limits/shared-budgets';
import { budgetOwner, type AuthFailureThrottle, type BudgetOwner } from '../limits/client-budgets';
import { isGraphqlPath, rateLimitHeaderValues, runningLow } from '../limits/rate-limit-headers';

/**
 * The paths whose requests count against a client's request rate: every API binding, and the
 * embedded authorization server's endpoints (anonymous: counted per client address).
 */
const isLimitedPath = (url: string) => /^\/(graphql|mcp|a2a)?(\/|\?|$)|^\/api\/|^\/(authorize|token|register|revoke|oauth\/login)(\?|$)/.test(url);

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's place in its client's request rate (GraphQL repeats it beside its points). */
    requestBudget: BudgetVerdict | null;
    /** Whom this request counts against (null until authenticated, or when authentication failed). */
    budgetOwner: BudgetOwner | null;
  }
}

/** A refusal for an exhausted budget, in the binding's error shape, with when to come back. */
export function rateLimited(message: string, verdict: BudgetVerdict): AppError {
  return new AppError('RATE_LIMITED', message, undefined, { retry_after: verdict.resetSeconds });
}

/**
 * Request rates per client on every API binding, shared by the instances: each key may make its
 * role's requests per minute, an anonymous client its address's share; a client address whose
 * credentials keep failing to verify gets 429 for each further failure (a credential that
 * verifies always counts against its own key instead). Over a limit the answer is 429 with
 * `Retry-After`. REST, MCP and A2A answers carry the `RateLimit` headers every time (as GitHub's
 * API does); GraphQL's only on a refusal or with less than a tenth of the budget left (as
 * Shopify's do), since every GraphQL answer already says what is left in `extensions.cost`.
 */
export function registerRequestLimits(
  fastify: FastifyInstance,
  app: App,
  limits: ResourceLimits,
  budgets: SharedBudgets,
  authFailures: AuthFailureThrottle,
  /** Runs once a request is admitted, before its body is read: answers it (true) to refuse it. */
  admitted?: (req: FastifyRequest, reply: FastifyReply, principal: Principal | null) => boolean,
): void {
  fastify.decorateRequest('requestBudget', null);
  fastify.decorateRequest('budgetOwner', null);
  const ratePerMinute = limits.requestsPerMinute;

  // Callback style, chained on the credential's promise (which the route waits for anyway): an
  // async hook would add a promise and a turn of the microtask queue to every request, and the
  // budgets nearly always answer at once. The credential is checked before the address's failures
  // are looked at: checking one costs about what a 429 does (an `sk_` key: a lookup by its prefix,
  // cached, and one SHA-256; a token: one signature), and a key that verifies must pass whatever
  // else its address sent.
  fastify.addHook('onRequest', (req, reply, done) => {
    if (!isLimitedPath(req.url)) return done();
    authenticate(req, app).then(
      (principal) => count(req, reply, principal, done),
      (err: unknown) => (err instanceof AppError && err.code === 'UNAUTHENTICATED' ? failed(req, reply, done) : done()),
    );
  });

  /** A credential that does not verify: counted against the address, or, once it has spent its budget, answered 429 here. */
  function failed(req: FastifyRequest, reply: FastifyReply, done: HookDone): void {
    const decide = (blocked: BudgetVerdict | undefined) => {
      if (blocked) return void refuse(req, reply, `too many failed authentications from this address; try again in ${blocked.resetSeconds} s`, blocked);
      // The route answers the failure (401) in its own words; here it only counts.
      const counted = authFailures.record(req.ip);
      if (counted instanceof Promise) counted.then(() => done(), done);
      else done();
    };
    const pending = authFailures.blocked(req.ip);
    if (pending instanceof Promise) pending.then(decide, done);
    else decide(pending);
  }

  function count(req: FastifyRequest, reply: FastifyReply, principal: Principal | null, done: HookDone): void {
    const owner = budgetOwner(principal, req.ip);
    req.budgetOwner = owner;
    const pending = budgets.take(owner.requests, 1, ratePerMinute[owner.role], 60);
    if (pending instanceof Promise) pending.then((verdict) => decide(req, reply, principal, owner, verdict, done), done);
    else decide(req, reply, principal, owner, pending, done);
  }

  function decide(req: FastifyRequest, reply: FastifyReply, principal: Principal | null, owner: BudgetOwner, verdict: BudgetVerdict, done: HookDone): void {
    req.requestBudget = verdict;
    // GraphQL's answers write both budgets themselves when one runs low (graphql/cost-limits.ts).
    if (!verdict.allowed || runningLow(verdict) || !isGraphqlPath(req.url)) {
      const [policy, state] = rateLimitHeaderValues('requests', verdict);
      reply.header('ratelimit-policy', policy).header('ratelimit', state);
    }
    if (!verdict.allowed) {
      const who = owner.role === 'anonymous' ? 'an anonymous client' : `a ${owner.role} key`;
      refuse(req, reply, `request rate limit reached (${verdict.limit} per ${verdict.windowSeconds} s for ${who}); try again in ${verdict.resetSeconds} s`, verdict);
      return;
    }
    // Answered by the next step (refused): the hook must not go on.
    if (!admitted?.(req, reply, principal)) done();
  }
}

/** A callback-style hook's `done`. */
type HookDone = (err?: Error) => void;

/** The binding's 429, whose Retry-After comes from the error's retry_after (http/errors). */
function refuse(req: FastifyRequest, reply: FastifyReply, message: string, verdict: BudgetVerdict): FastifyReply {
  return errorSenderFor(req.url)(reply, rateLimited(message, verdict));
}
