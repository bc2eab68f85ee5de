import { HeaderMap, type ApolloServerPlugin, type GraphQLRequestContextDidResolveOperation, type GraphQLRequestContextWillSendResponse, type GraphQLRequestListener, type GraphQLResponse } from '@apollo/server';
import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import type { Principal } from '../application/api-keys';
import { GraphQLError } from 'graphql';
import type { App } from '../app';
import type { ResourceLimits } from '../config';
import { budgetOwner, rateLimitHeaderValues } from '../http/request-limits';
import type { BudgetVerdict, SharedBudgets } from '../http/shared-budgets';
import type { GraphQLContext } from './context';
import { hasMoreTokensThan, operationCost, TOKENS_PER_POINT, type OperationCost } from './cost';
import { authenticate } from '../http/auth';

/** What every GraphQL answer says of its price, so a client can pace itself (as Shopify's do). */
export interface CostExtension {
  /** This operation's price in points (null: refused before it could be priced). */
  requested: number | null;
  /** The most one operation may cost. */
  maximum: number;
  /** The caller's points for the current window, shared by every instance. */
  budget?: { limit: number; remaining: number; resetSeconds: number; windowSeconds: number };
}

/** A document past this many tokens alone costs more than the maximum: refused before it is parsed. */
export const maxTokensFor = (limits: ResourceLimits) => limits.graphql.maxCost * TOKENS_PER_POINT;

/** The caller's GraphQL points: the bucket they are counted in and their role's budget. */
function pointsOf(limits: ResourceLimits, principal: Principal | null, clientAddress: string): { bucket: string; limit: number } {
  const owner = budgetOwner(principal, clientAddress);
  return { bucket: owner.points, limit: limits.graphql.pointsPerMinute[owner.role] };
}

/** The `RateLimit` headers with both budgets: the request rate (when counted) and the points. */
function budgetHeaders(requests: BudgetVerdict | undefined, points: BudgetVerdict): [policy: string, state: string] {
  return requests ? rateLimitHeaderValues('requests', requests, 'graphql-points', points) : rateLimitHeaderValues('graphql-points', points);
}

/**
 * For the request limits' `admitted` step: a GraphQL caller whose points for the minute are spent
 * is refused (THROTTLED, 429) before the body is even read, so a client looping on refused
 * operations costs next to nothing once its budget is gone. True when it answered.
 */
export function refuseWhenPointsSpent(limits: ResourceLimits, budgets: SharedBudgets): (req: FastifyRequest, reply: FastifyReply, principal: Principal | null) => boolean {
  return (req, reply, principal) => {
    if (!/^\/graphql(\?|$)/.test(req.url) || req.method === 'OPTIONS') return false;
    const { bucket, limit } = pointsOf(limits, principal, req.ip);
    const points = budgets.peek(bucket, limit, 60);
    // A budget being refreshed is judged by the operation's own price, after its body.
    if (points instanceof Promise || points.allowed) return false;
    const [policy, state] = budgetHeaders(req.requestBudget ?? undefined, points);
    void reply
      .status(429)
      .headers({ 'retry-after': String(points.resetSeconds), 'ratelimit-policy': policy, ratelimit: state })
      .send({
        errors: [{ message: `Your ${points.limit} points per ${points.windowSeconds} s are spent; try again in ${points.resetSeconds} s.`, extensions: { code: 'THROTTLED' } }],
        extensions: { cost: costExtension(null, limits, points) },
      });
    return true;
  };
}

/**
 * A route preHandler for /graphql: a document past `maxTokensFor` tokens alone costs more than
 * one operation may, so it is refused (MAX_COST_EXCEEDED, 400) after counting that many tokens,
 * before Apollo hashes, parses and validates all of it (the 800 KB probe took seconds of that).
 * Like every operation refused for its size, it is charged the most one operation may cost.
 */
export function refuseOversizedDocuments(app: App, limits: ResourceLimits, budgets: SharedBudgets): preHandlerHookHandler {
  const maxTokens = maxTokensFor(limits);
  // Callback style: an async hook would cost a promise on every GraphQL request, and only the
  // refusal has anything to wait for.
  return (req, reply, done) => {
    const query = (req.body as { query?: unknown } | undefined)?.query ?? (req.query as { query?: unknown } | undefined)?.query;
    if (typeof query !== 'string' || !hasMoreTokensThan(query, maxTokens)) return done();
    refuseOversized(req, reply, maxTokens).catch((err: unknown) => done(err as Error));
  };
  async function refuseOversized(req: FastifyRequest, reply: FastifyReply, maxTokens: number): Promise<void> {
    const { bucket, limit } = pointsOf(limits, await authenticate(req, app).catch(() => null), req.ip);
    await budgets.spend(bucket, limits.graphql.maxCost, 60);
    const points = await budgets.peek(bucket, limit, 60);
    const message = `This operation costs more than ${limits.graphql.maxCost} points, the most one operation may cost: its document alone has more than ${maxTokens} tokens (1 point per ${TOKENS_PER_POINT}). Ask for less in one operation.`;
    const [policy, state] = budgetHeaders(req.requestBudget ?? undefined, points);
    void reply
      .status(400)
      .headers({ 'ratelimit-policy': policy, ratelimit: state })
      .send({
        errors: [{ message, extensions: { code: 'MAX_COST_EXCEEDED', maximumCost: limits.graphql.maxCost } }],
        extensions: { cost: costExtension(null, limits, points) },
      });
  }
}

function costExtension(requested: number | null, limits: ResourceLimits, points: BudgetVerdict): CostExtension {
  return {
    requested,
    maximum: limits.graphql.maxCost,
    budget: { limit: points.limit, remaining: points.remaining, resetSeconds: points.resetSeconds, windowSeconds: points.windowSeconds },
  };
}

/**
 * Prices each operation before it runs (see ./cost.ts) and refuses one that is too deep
 * (MAX_DEPTH_EXCEEDED) or costs more than one operation may (MAX_COST_EXCEEDED), both 400, or whose
 * price the caller's points for the minute no longer cover (THROTTLED, 429 with Retry-After). Every
 * answer carries `extensions.cost` and the `RateLimit` headers with both budgets.
 */
export function costLimitsPlugin(limits: ResourceLimits, budgets: SharedBudgets): ApolloServerPlugin<GraphQLContext> {
  const { maxCost, maxDepth } = limits.graphql;
  // One listener for every request (its state lives in the request's context): no closures to
  // allocate per request. Both hooks answer synchronously unless a budget is being refreshed
  // (rare): no promise per request either. Apollo's types ask for promises, but it awaits
  // whatever a hook returns, inside the try that turns a throw into the error response
  // (requestPipeline: Promise.all over the hooks).
  const hooks = {
    didResolveOperation({ document, operation, request, contextValue, schema }: GraphQLRequestContextDidResolveOperation<GraphQLContext>): Promise<void> | undefined {
      if (!operation) return; // Apollo refuses a document without the named operation itself
      const cost = operationCost(schema, document, operation, request.variables);
      if (!cost) return; // the variables do not fit: execution refuses it, having run nothing
      contextValue.priced.cost = cost;
      const { bucket, limit } = pointsOf(limits, contextValue.principal, contextValue.clientAddress);
      if (cost.depth > maxDepth || cost.total > maxCost) return refuseForSize(bucket, cost);
      const pending = budgets.take(bucket, cost.total, limit, 60);
      if (pending instanceof Promise) return pending.then((points) => admit(contextValue, cost, points));
      admit(contextValue, cost, pending);
      return;
    },
    willSendResponse({ response, contextValue }: GraphQLRequestContextWillSendResponse<GraphQLContext>): Promise<void> | undefined {
      const points = contextValue.priced.points;
      if (points) {
        addCost(response, contextValue, points);
        return;
      }
      const { bucket, limit } = pointsOf(limits, contextValue.principal, contextValue.clientAddress);
      const pending = budgets.peek(bucket, limit, 60);
      if (pending instanceof Promise) return pending.then((p) => addCost(response, contextValue, p));
      addCost(response, contextValue, pending);
      return;
    },
  };
  const listener = hooks as GraphQLRequestListener<GraphQLContext>;

  /** Refusing an operation for its size is work too: it is charged the most one may cost. */
  async function refuseForSize(bucket: string, cost: OperationCost): Promise<never> {
    await budgets.spend(bucket, maxCost, 60);
    if (cost.depth > maxDepth) {
      throw new GraphQLError(`This operation nests ${cost.depth} levels deep; the most allowed is ${maxDepth}.`, {
        extensions: { code: 'MAX_DEPTH_EXCEEDED', depth: cost.depth, maximumDepth: maxDepth, http: { status: 400 } },
      });
    }
    throw new GraphQLError(`This operation costs ${cost.total} points, more than ${maxCost}, the most one operation may cost. Ask for fewer fields, items or aliases in one operation.`, {
      extensions: { code: 'MAX_COST_EXCEEDED', cost: cost.total, maximumCost: maxCost, http: { status: 400 } },
    });
  }

  function admit(contextValue: GraphQLContext, cost: OperationCost, points: BudgetVerdict): void {
    contextValue.priced.points = points;
    if (!points.allowed) {
      throw new GraphQLError(`This operation costs ${cost.total} points and ${points.remaining} of your ${points.limit} per ${points.windowSeconds} s are left; try again in ${points.resetSeconds} s.`, {
        extensions: { code: 'THROTTLED', cost: cost.total, http: { status: 429, headers: new HeaderMap([['retry-after', String(points.resetSeconds)]]) } },
      });
    }
  }

  function addCost(response: GraphQLResponse, contextValue: GraphQLContext, points: BudgetVerdict): void {
    if (response.body.kind === 'single') {
      const result = response.body.singleResult;
      const cost = costExtension(contextValue.priced.cost?.total ?? null, limits, points);
      if (result.extensions) result.extensions = { ...result.extensions, cost };
      else result.extensions = { cost };
    }
    const [policy, state] = budgetHeaders(contextValue.requestBudget, points);
    response.http.headers.set('ratelimit-policy', policy);
    response.http.headers.set('ratelimit', state);
  }

  return {
    // Not async: Apollo awaits what this returns, and a promise per request is work for nothing.
    requestDidStart: (() => listener) as unknown as NonNullable<ApolloServerPlugin<GraphQLContext>['requestDidStart']>,
  };
}
