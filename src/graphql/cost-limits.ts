import { HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import type { preHandlerAsyncHookHandler } from 'fastify';
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

/**
 * A Fastify preHandler for /graphql: a document past `maxTokensFor` tokens alone costs more than
 * one operation may, so it is refused (MAX_COST_EXCEEDED, 400) after counting that many tokens,
 * before Apollo hashes, parses and validates all of it (the 800 KB probe took seconds of that).
 */
export function refuseOversizedDocuments(app: App, limits: ResourceLimits, budgets: SharedBudgets): preHandlerAsyncHookHandler {
  const maxTokens = maxTokensFor(limits);
  return async (req, reply) => {
    const query = (req.body as { query?: unknown } | undefined)?.query ?? (req.query as { query?: unknown } | undefined)?.query;
    if (typeof query !== 'string' || !hasMoreTokensThan(query, maxTokens)) return;
    const owner = budgetOwner(await authenticate(req, app).catch(() => null), req.ip);
    const points = await budgets.peek(`graphql-points:${owner.id}`, limits.graphql.pointsPerMinute[owner.role], 60);
    const message = `This operation costs more than ${limits.graphql.maxCost} points, the most one operation may cost: its document alone has more than ${maxTokens} tokens (1 point per ${TOKENS_PER_POINT}). Ask for less in one operation.`;
    return reply.status(400).send({
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
  const { maxCost, maxDepth, pointsPerMinute } = limits.graphql;
  return {
    async requestDidStart() {
      let cost: OperationCost | undefined;
      let points: BudgetVerdict | undefined;
      return {
        async didResolveOperation({ document, operation, request, contextValue, schema }) {
          if (!operation) return; // Apollo refuses a document without the named operation itself
          cost = operationCost(schema, document, operation, request.variables);
          if (!cost) return; // the variables do not fit: execution refuses it, having run nothing
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
          const owner = budgetOwner(contextValue.principal, contextValue.clientAddress);
          points = await budgets.take(`graphql-points:${owner.id}`, cost.total, pointsPerMinute[owner.role], 60);
          if (!points.allowed) {
            throw new GraphQLError(`This operation costs ${cost.total} points and ${points.remaining} of your ${points.limit} per ${points.windowSeconds} s are left; try again in ${points.resetSeconds} s.`, {
              extensions: { code: 'THROTTLED', cost: cost.total, http: { status: 429, headers: new HeaderMap([['retry-after', String(points.resetSeconds)]]) } },
            });
          }
        },
        async willSendResponse({ response, contextValue }) {
          const owner = budgetOwner(contextValue.principal, contextValue.clientAddress);
          points ??= await budgets.peek(`graphql-points:${owner.id}`, pointsPerMinute[owner.role], 60);
          if (response.body.kind === 'single') response.body.singleResult.extensions = { ...response.body.singleResult.extensions, cost: costExtension(cost?.total ?? null, limits, points) };
          const named: [string, BudgetVerdict][] = contextValue.requestBudget ? [['requests', contextValue.requestBudget], ['graphql-points', points]] : [['graphql-points', points]];
          const [policy, state] = rateLimitHeaderValues(named);
          response.http.headers.set('ratelimit-policy', policy);
          response.http.headers.set('ratelimit', state);
        },
      };
    },
  };
}
