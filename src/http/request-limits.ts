import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../app';
import type { Principal } from '../application/api-keys';
import type { LimitedRole, ResourceLimits } from '../config';
import { AppError } from '../shared/errors';
import { authenticate } from './auth';
import { errorSenderFor } from './errors';
import type { BudgetVerdict, SharedBudgets } from './shared-budgets';

/**
 * The paths whose requests count against a client's request rate: every API binding, and the
 * embedded authorization server's endpoints (anonymous: counted per client address).
 */
const isLimitedPath = (url: string) => /^\/(graphql|mcp)(\/|\?|$)|^\/api\/|^\/(authorize|token|register|revoke|oauth\/login)(\?|$)/.test(url);

declare module 'fastify' {
  interface FastifyRequest {
    /** This request's place in its client's request rate (GraphQL repeats it beside its points). */
    requestBudget: BudgetVerdict | null;
  }
}

/** Who a limit counts against: the key (its role's limit), or the client address when anonymous. */
export function budgetOwner(principal: Principal | null, ip: string): { id: string; role: LimitedRole } {
  return principal ? { id: `key:${principal.keyId}`, role: principal.role } : { id: `ip:${ip}`, role: 'anonymous' };
}

/**
 * `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers) for the named budgets:
 * what each allows per window, and what is left of it and for how long.
 */
export function rateLimitHeaderValues(budgets: ReadonlyArray<readonly [string, BudgetVerdict]>): [policy: string, state: string] {
  // Plain concatenation: this runs on every counted request.
  let policy = '';
  let state = '';
  for (const [name, v] of budgets) {
    const sep = policy === '' ? '' : ', ';
    policy += `${sep}"${name}";q=${v.limit};w=${v.windowSeconds}`;
    state += `${sep}"${name}";r=${v.remaining};t=${v.resetSeconds}`;
  }
  return [policy, state];
}

/**
 * Credentials that fail to verify, counted per client address (shared by the instances): past
 * `perMinute`, that address's credentials are not checked again until the minute ends. The API
 * bindings and the OAuth sign-in form count into the same budget.
 */
export class AuthFailureThrottle {
  constructor(
    private readonly budgets: SharedBudgets,
    private readonly perMinute: number,
  ) {}

  /** Undefined while the address may try; else its verdict (the seconds until it may try again). */
  blocked(address: string): BudgetVerdict | undefined | Promise<BudgetVerdict | undefined> {
    const room = this.budgets.peek(`auth-failures:${address}`, this.perMinute, 60);
    return room instanceof Promise ? room.then((r) => (r.allowed ? undefined : r)) : room.allowed ? undefined : room;
  }

  record(address: string): void | Promise<void> {
    return this.budgets.spend(`auth-failures:${address}`, 1, 60);
  }
}

/** A refusal for an exhausted budget, in the binding's error shape, with when to come back. */
export function rateLimited(message: string, verdict: BudgetVerdict): AppError {
  return new AppError('RATE_LIMITED', message, undefined, { retry_after: verdict.resetSeconds });
}

/**
 * Request rates per client on every API binding, shared by the instances: each key may make its
 * role's requests per minute, an anonymous client its address's share; a client address whose
 * credentials keep failing to verify is refused before they are checked again. Over a limit the
 * answer is 429 with `Retry-After`; every counted answer carries the `RateLimit` headers.
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
  // One await (the credential, which the route would wait for anyway); the budgets answer at once.
  fastify.addHook('onRequest', async (req, reply) => {
    if (!isLimitedPath(req.url)) return;
    if (req.headers.authorization !== undefined) {
      const pending = authFailures.blocked(req.ip);
      const blocked = pending instanceof Promise ? await pending : pending;
      if (blocked) return refuse(req, reply, `too many failed authentications from this address; try again in ${blocked.resetSeconds} s`, blocked);
    }
    let principal: Principal | null = null;
    try {
      principal = await authenticate(req, app);
    } catch (err) {
      // The route answers the failure in its own words; here it only counts.
      if (err instanceof AppError && err.code === 'UNAUTHENTICATED') await authFailures.record(req.ip);
      return;
    }
    const owner = budgetOwner(principal, req.ip);
    const pending = budgets.take(`requests:${owner.id}`, 1, limits.requestsPerMinute[owner.role], 60);
    const verdict = pending instanceof Promise ? await pending : pending;
    req.requestBudget = verdict;
    const [policy, state] = rateLimitHeaderValues([['requests', verdict]]);
    reply.header('ratelimit-policy', policy).header('ratelimit', state);
    if (!verdict.allowed) {
      const who = owner.role === 'anonymous' ? 'an anonymous client' : `a ${owner.role} key`;
      return refuse(req, reply, `request rate limit reached (${verdict.limit} per ${verdict.windowSeconds} s for ${who}); try again in ${verdict.resetSeconds} s`, verdict);
    }
    if (admitted?.(req, reply, principal)) return reply;
  });
}

/** The binding's 429, whose Retry-After comes from the error's retry_after (http/errors). */
function refuse(req: FastifyRequest, reply: FastifyReply, message: string, verdict: BudgetVerdict): FastifyReply {
  return errorSenderFor(req.url)(reply, rateLimited(message, verdict));
}
