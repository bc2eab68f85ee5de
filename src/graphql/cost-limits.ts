import { HeaderMap, type ApolloServerPlugin, type GraphQLRequestListener } from '@apollo/server';
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Principal } from '../application/api-keys';
import { GraphQLError } from 'graphql';
import type { App } from '../app';
import type { ResourceLimits } from '../config';
import { budgetOwner, rateLimitHeaderValues } from '../http/request-limits';
import type { BudgetVerdict, SharedBudgets } from '../http/shared-budgets';
import type { GraphQLContext } from './context';
import { hasMoreTokensThan, operationCost, TOKENS_PER_POINT } from './cost';
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
  return { bucket: `graphql-points:${owner.id}`, limit: limits.graphql.pointsPerMinute[owner.role] };
}

/** The `RateLimit` headers with both budgets: the request rate (when counted) and the points. */
function budgetHeaders(requests: BudgetVerdict | undefined, points: BudgetVerdict): [policy: string, state: string] {
  return rateLimitHeaderValues(requests ? [['requests', requests], ['graphql-points', points]] : [['graphql-points', points]]);
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
export function refuseOversizedDocuments(app: App, limits: ResourceLimits, budgets: SharedBudgets): preHandlerAsyncHookHandler {
  const maxTokens = maxTokensFor(limits);
  return async (req, reply) => {
    const query = (req.body as { query?: unknown } | undefined)?.query ?? (req.query as { query?: unknown } | undefined)?.query;
    if (typeof query !== 'string' || !hasMoreTokensThan(query, maxTokens)) return;
    const { bucket, limit } = pointsOf(limits, await authenticate(req, app).catch(() => null), req.ip);
    await budgets.spend(bucket, limits.graphql.maxCost, 60);
    const points = await budgets.peek(bucket, limit, 60);
    const message = `This operation costs more than ${limits.graphql.maxCost} points, the most one operation may cost: its document alone has more than ${maxTokens} tokens (1 point per ${TOKENS_PER_POINT}). Ask for less in one operation.`;
    const [policy, state] = budgetHeaders(req.requestBudget ?? undefined, points);
    return reply
      .status(400)
      .headers({ 'ratelimit-policy': policy, ratelimit: state })
      .send({
        errors: [{ message, extensions: { code: 'MAX_COST_EXCEEDED', maximumCost: limits.graphql.maxCost } }],
        extensions: { cost: costExtension(null, limits, points) },
      });
  };
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
  // allocate per request.
  const listener: GraphQLRequestListener<GraphQLContext> = {
    async didResolveOperation({ document, operation, request, contextValue, schema }) {
      if (!operation) return; // Apollo refuses a document without the named operation itself
      const cost = operationCost(schema, document, operation, request.variables);
      if (!cost) return; // the variables do not fit: execution refuses it, having run nothing
      const priced = contextValue.priced;
      priced.cost = cost;
      const { bucket, limit } = pointsOf(limits, contextValue.principal, contextValue.clientAddress);
      // Refusing an operation for its size is work too: it is charged the most one may cost.
      if (cost.depth > maxDepth || cost.total > maxCost) await budgets.spend(bucket, maxCost, 60);
      if (cost.depth > maxDepth) {
        throw new GraphQLError(`This operation nests ${cost.depth} levels deep; the most allowed is ${maxDepth}.`, {
          extensions: { code: 'MAX_DEPTH_EXCEEDED', depth: cost.depth, maximumDepth: maxDepth, http: { status: 400 } },
        });
      }
      if (cost.total > maxCost) {
        throw new GraphQLError(`This operation costs ${cost.total} points, more than ${maxCost}, the most one operation may cost. Ask for fewer fields, items or aliases in one operation.`, {
          extensions: { code: 'MAX_COST_EXCEEDED', cost: cost.total, maximumCost: maxCost, http: { status: 400 } },
        });
      }
      const pending = budgets.take(bucket, cost.total, limit, 60);
      const points = (priced.points = pending instanceof Promise ? await pending : pending);
      if (!points.allowed) {
        throw new GraphQLError(`This operation costs ${cost.total} points and ${points.remaining} of your ${points.limit} per ${points.windowSeconds} s are left; try again in ${points.resetSeconds} s.`, {
          extensions: { code: 'THROTTLED', cost: cost.total, http: { status: 429, headers: new HeaderMap([['retry-after', String(points.resetSeconds)]]) } },
        });
      }
    },
    async willSendResponse({ response, contextValue }) {
      let points = contextValue.priced.points;
      if (!points) {
        const { bucket, limit } = pointsOf(limits, contextValue.principal, contextValue.clientAddress);
        const pending = budgets.peek(bucket, limit, 60);
        points = pending instanceof Promise ? await pending : pending;
      }
      if (response.body.kind === 'single') {
        const result = response.body.singleResult;
        result.extensions = { ...result.extensions, cost: costExtension(contextValue.priced.cost?.total ?? null, limits, points) };
      }
      const [policy, state] = budgetHeaders(contextValue.requestBudget, points);
      response.http.headers.set('ratelimit-policy', policy);
      response.http.headers.set('ratelimit', state);
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
