import type { FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { getOperationAST, type DocumentNode, type GraphQLSchema } from 'graphql';
import type { Principal } from '../application/api-keys';
import type { ResourceLimits } from '../config';
import { budgetOwner, type BudgetOwner } from '../limits/client-budgets';
import { rateLimitHeaderValues, runningLow } from '../limits/rate-limit-headers';
import type { BudgetVerdict, SharedBudgets } from '../limits/shared-budgets';
import { hasMoreTokensThan, operationCost, TOKENS_PER_POINT, type OperationCost } from './cost';
import { operationParamsOf, type GraphqlDocuments, type InvalidDocumentAnswer, type OperationParams } from './documents';

declare module 'fastify' {
  interface FastifyRequest {
    /** The GraphQL operation's price (null: not priced, e.g. a document that does not parse). */
    operationPrice: OperationCost | null;
    /** The caller's points once the price was taken from them. */
    pointsLeft: BudgetVerdict | null;
  }
}

/**
 * What every GraphQL answer says of its price, so a client can pace itself: Shopify's
 * `extensions.cost` (`requestedQueryCost`, `actualQueryCost`, `throttleStatus`), fitted to a budget
 * that is a fixed window rather than a leaking bucket.
 */
export interface CostExtension {
  /** This operation's price in points (null: refused before it could be priced). */
  requested: number | null;
  /**
   * What was taken from the budget for it: the price when it ran (charged before it runs, never
   * refunded), the most one operation may cost when refused for its size or depth, 0 when refused
   * for want of points or not priced.
   */
  actual: number;
  /** The most one operation may cost. */
  maximum: number;
  /** The caller's points, shared by every instance. */
  throttleStatus: {
    /** The points per window. */
    maximumAvailable: number;
    /** What is left of them in this window. */
    currentlyAvailable: number;
    /**
     * Points per second a client may spend on average and never be throttled (`maximumAvailable`
     * over `windowSeconds`): the window gives every point back at once, `resetSeconds` from now.
     */
    restoreRate: number;
    resetSeconds: number;
    windowSeconds: number;
  };
}

/** A document past this many tokens alone costs more than the maximum: refused before it is parsed. */
export const maxTokensFor = (limits: ResourceLimits) => limits.graphql.maxCost * TOKENS_PER_POINT;

/** The caller's GraphQL points: the bucket they are counted in and their role's budget. */
function pointsOf(limits: ResourceLimits, owner: BudgetOwner): { bucket: string; limit: number } {
  return { bucket: owner.points, limit: limits.graphql.pointsPerMinute[owner.role] };
}

/** Whom a GraphQL request's points count against: its key, else its address (anonymous, or credentials that failed). */
const ownerOf = (req: FastifyRequest) => req.budgetOwner ?? budgetOwner(null, req.ip);

/** The `RateLimit` headers with both budgets: the request rate (when counted) and the points. */
function budgetHeaders(requests: BudgetVerdict | undefined, points: BudgetVerdict): [policy: string, state: string] {
  return requests ? rateLimitHeaderValues('requests', requests, 'graphql-points', points) : rateLimitHeaderValues('graphql-points', points);
}

/** Whether a GraphQL answer that is not a 429 carries the `RateLimit` headers: only once a budget runs low. */
function budgetRunsLow(requests: BudgetVerdict | null, points: BudgetVerdict): boolean {
  return runningLow(points) || (requests !== null && runningLow(requests));
}

/** Shopify's `restoreRate` for a window: its points per second, to two decimals. */
const restoreRateOf = (points: BudgetVerdict) => Math.round((points.limit * 100) / points.windowSeconds) / 100;

/**
 * For the request limits' `admitted` step: a GraphQL caller whose points for the minute are spent
 * is refused (THROTTLED, 429) before the body is even read, so a client looping on refused
 * operations costs next to nothing once its budget is gone. True when it answered.
 */
export function refuseWhenPointsSpent(limits: ResourceLimits, budgets: SharedBudgets): (req: FastifyRequest, reply: FastifyReply, principal: Principal | null) => boolean {
  return (req, reply, principal) => {
    if (req.routeOptions.url !== '/graphql' || req.method === 'OPTIONS') return false;
    const { bucket, limit } = pointsOf(limits, budgetOwner(principal, req.ip));
    const points = budgets.peek(bucket, limit, 60);
    // A budget being refreshed is judged by the operation's own price, after its body.
    if (points instanceof Promise || points.allowed) return false;
    const [policy, state] = budgetHeaders(req.requestBudget ?? undefined, points);
    void reply
      .status(429)
      .headers({ 'retry-after': String(points.resetSeconds), 'ratelimit-policy': policy, ratelimit: state })
      .send({
        errors: [{ message: `Your ${points.limit} points per ${points.windowSeconds} s are spent; try again in ${points.resetSeconds} s.`, extensions: { code: 'THROTTLED' } }],
        extensions: { cost: costExtension(null, 0, limits, points) },
      });
    return true;
  };
}

function costExtension(requested: number | null, actual: number, limits: ResourceLimits, points: BudgetVerdict): CostExtension {
  return {
    requested,
    actual,
    maximum: limits.graphql.maxCost,
    throttleStatus: { maximumAvailable: points.limit, currentlyAvailable: points.remaining, restoreRate: restoreRateOf(points), resetSeconds: points.resetSeconds, windowSeconds: points.windowSeconds },
  };
}

/**
 * A GraphQL answer of the pricing step itself: the error, and the caller's points in
 * `extensions.cost`; the `RateLimit` headers on a 429, or on a 400 once a budget runs low.
 */
function refuseOperation(req: FastifyRequest, reply: FastifyReply, limits: ResourceLimits, status: number, error: { message: string; extensions: Record<string, unknown> }, points: BudgetVerdict, actual: number): void {
  if (status === 429 || budgetRunsLow(req.requestBudget, points)) {
    const [policy, state] = budgetHeaders(req.requestBudget ?? undefined, points);
    void reply.headers({ 'ratelimit-policy': policy, ratelimit: state, ...(status === 429 ? { 'retry-after': String(points.resetSeconds) } : {}) });
  }
  void reply.status(status).send({ errors: [error], extensions: { cost: costExtension(req.operationPrice?.total ?? null, actual, limits, points) } });
}

/**
 * The /graphql route's preHandler: prices the operation before Apollo sees it (./cost.ts) and
 * refuses one that is too deep (MAX_DEPTH_EXCEEDED) or costs more than one operation may
 * (MAX_COST_EXCEEDED), both 400, or whose price the caller's points for the minute no longer
 * cover (THROTTLED, 429 with Retry-After). A document past `maxTokensFor` tokens is refused after
 * counting that many, before anything parses all of it (the 800 KB probe took seconds of that).
 * Refusing for size is work too: it is charged the most one operation may cost.
 *
 * Done here rather than in an Apollo plugin: a plugin with any hook puts a promise per hook and
 * per request through Apollo's pipeline, which cost more than the whole price check (the limits
 * must cost under 3 % of a request). What Apollo would refuse anyway (a syntax error, an unknown
 * operation name, variables that do not fit) is left for Apollo to report, unpriced.
 */
export function priceOperations(schema: GraphQLSchema, limits: ResourceLimits, budgets: SharedBudgets, documents: GraphqlDocuments, refuseInvalid: InvalidDocumentAnswer): preHandlerHookHandler {
  const maxTokens = maxTokensFor(limits);
  // Callback style: an async hook would cost a promise on every GraphQL request, and the budgets
  // nearly always answer at once.
  return (req, reply, done) => {
    const params = operationParamsOf(req);
    const query = params?.query;
    if (typeof query !== 'string') return done();
    if (hasMoreTokensThan(query, maxTokens)) {
      refuseForSize(req, reply, oversized(limits)).catch((err: unknown) => done(err as Error));
      return;
    }
    // Credentials that failed: the route answers 401 before anything would parse the document.
    if (!req.budgetOwner) return done();
    const prepared = documents.prepare(query);
    if (!prepared.valid) {
      refuseInvalid(req, reply, prepared).catch((err: unknown) => done(err as Error));
      return;
    }
    const cost = priceOf(schema, prepared.document, params!);
    if (!cost) return done();
    req.operationPrice = cost;
    const tooLarge = sizeRefusal(cost, limits);
    if (tooLarge) {
      refuseForSize(req, reply, tooLarge).catch((err: unknown) => done(err as Error));
      return;
    }
    const { bucket, limit } = pointsOf(limits, req.budgetOwner);
    const pending = budgets.take(bucket, cost.total, limit, 60);
    if (pending instanceof Promise) pending.then((points) => admit(req, reply, cost, points, done), done);
    else admit(req, reply, cost, pending, done);
  };

  function admit(req: FastifyRequest, reply: FastifyReply, cost: OperationCost, points: BudgetVerdict, done: (err?: Error) => void): void {
    req.pointsLeft = points;
    if (points.allowed) return done();
    refuseOperation(req, reply, limits, 429, throttled(cost, points), points, 0);
  }

  async function refuseForSize(req: FastifyRequest, reply: FastifyReply, error: OperationRefusal): Promise<void> {
    const { bucket, limit } = pointsOf(limits, ownerOf(req));
    await budgets.spend(bucket, limits.graphql.maxCost, 60);
    refuseOperation(req, reply, limits, 400, error, await budgets.peek(bucket, limit, 60), limits.graphql.maxCost);
  }
}

/** An operation refused by the limits, as a GraphQL error (message and extensions). */
export interface OperationRefusal {
  message: string;
  extensions: Record<string, unknown>;
}

/**
 * The operation's price, or undefined where Apollo or the transport will refuse it anyway and
 * nothing runs: a document that does not parse, an unknown operation name, variables that are
 * not an object or do not fit its directives.
 */
function priceOf(schema: GraphQLSchema, document: DocumentNode, params: OperationParams): OperationCost | undefined {
  const operation = getOperationAST(document, typeof params.operationName === 'string' ? params.operationName : undefined);
  const variables = variablesOf(params.variables);
  if (!operation || variables === null) return undefined;
  return operationCost(schema, document, operation, variables);
}

function oversized(limits: ResourceLimits): OperationRefusal {
  const { maxCost } = limits.graphql;
  const maxTokens = maxTokensFor(limits);
  const message = `This operation costs more than ${maxCost} points, the most one operation may cost: its document alone has more than ${maxTokens} tokens (1 point per ${TOKENS_PER_POINT}). Ask for less in one operation.`;
  return { message, extensions: { code: 'MAX_COST_EXCEEDED', maximumCost: maxCost } };
}

/** Too deep, or costing more than one operation may: refused whatever the budget. */
function sizeRefusal(cost: OperationCost, limits: ResourceLimits): OperationRefusal | undefined {
  const { maxCost, maxDepth } = limits.graphql;
  if (cost.depth > maxDepth) {
    return { message: `This operation nests ${cost.depth} levels deep; the most allowed is ${maxDepth}.`, extensions: { code: 'MAX_DEPTH_EXCEEDED', depth: cost.depth, maximumDepth: maxDepth } };
  }
  if (cost.total > maxCost) {
    const message = `This operation costs ${cost.total} points, more than ${maxCost}, the most one operation may cost. Ask for fewer fields, items or aliases in one operation.`;
    return { message, extensions: { code: 'MAX_COST_EXCEEDED', cost: cost.total, maximumCost: maxCost } };
  }
  return undefined;
}

function throttled(cost: OperationCost, points: BudgetVerdict): OperationRefusal {
  const message = `This operation costs ${cost.total} points and ${points.remaining} of your ${points.limit} per ${points.windowSeconds} s are left; try again in ${points.resetSeconds} s.`;
  return { message, extensions: { code: 'THROTTLED', cost: cost.total, retryAfter: points.resetSeconds } };
}

/**
 * The same price and limits for operations that arrive another way than POST /graphql
 * (subscriptions over graphql-ws and graphql-sse): the refusal, or undefined to run it.
 */
export function operationPricer(schema: GraphQLSchema, limits: ResourceLimits, budgets: SharedBudgets, documents: GraphqlDocuments): (owner: BudgetOwner, params: OperationParams) => Promise<OperationRefusal | undefined> {
  const maxTokens = maxTokensFor(limits);
  return async (owner, params) => {
    if (typeof params.query !== 'string') return undefined;
    const { bucket, limit } = pointsOf(limits, owner);
    const tooLarge = hasMoreTokensThan(params.query, maxTokens) ? oversized(limits) : undefined;
    const prepared = tooLarge ? undefined : documents.prepare(params.query);
    const cost = prepared?.valid ? priceOf(schema, prepared.document, params) : undefined;
    const refusal = tooLarge ?? (cost && sizeRefusal(cost, limits));
    if (refusal) {
      await budgets.spend(bucket, limits.graphql.maxCost, 60);
      return refusal;
    }
    if (!cost) return undefined;
    const points = await budgets.take(bucket, cost.total, limit, 60);
    return points.allowed ? undefined : throttled(cost, points);
  };
}

/** A request's variables as execution will read them: an object, none, or null when they are not an object (Apollo refuses those). */
function variablesOf(given: unknown): Record<string, unknown> | undefined | null {
  if (given === undefined || given === null) return undefined;
  if (typeof given === 'string') {
    // A GET request's variables are JSON in the query string.
    try {
      return variablesOf(JSON.parse(given) as unknown);
    } catch {
      return null;
    }
  }
  return typeof given === 'object' && !Array.isArray(given) ? (given as Record<string, unknown>) : null;
}

/**
 * What the pricing step adds to every answer Apollo gives: `extensions.cost` (the operation's price
 * and the caller's points), and the `RateLimit` headers with both budgets once one runs low. `body` is Apollo's
 * single JSON object. Its own top-level `extensions` (from a plugin; none sets any here) would come
 * first (see `stringifyResultExtensionsFirst`), and the cost is written into them; else the cost
 * is the answer's `extensions`, last. Written into the text rather than the result object: the
 * object is only reachable from an Apollo plugin, whose hooks cost every request.
 */
export function withCost(limits: ResourceLimits, budgets: SharedBudgets): (req: FastifyRequest, reply: FastifyReply, body: string) => string | Promise<string> {
  return (req, reply, body) => {
    const points = req.pointsLeft;
    if (points) return addCost(req, reply, body, points);
    const { bucket, limit } = pointsOf(limits, ownerOf(req));
    const pending = budgets.peek(bucket, limit, 60);
    return pending instanceof Promise ? pending.then((p) => addCost(req, reply, body, p)) : addCost(req, reply, body, pending);
  };

  function addCost(req: FastifyRequest, reply: FastifyReply, body: string, points: BudgetVerdict): string {
    if (budgetRunsLow(req.requestBudget, points)) {
      const [policy, state] = budgetHeaders(req.requestBudget ?? undefined, points);
      reply.header('ratelimit-policy', policy).header('ratelimit', state);
    }
    const requested = req.operationPrice?.total ?? null;
    // Taken from the budget when it was admitted (req.pointsLeft is set then); nothing otherwise.
    const actual = requested !== null && req.pointsLeft?.allowed ? requested : 0;
    // Numbers only: written directly rather than through JSON.stringify.
    const cost = `"cost":{"requested":${requested},"actual":${actual},"maximum":${limits.graphql.maxCost},"throttleStatus":{"maximumAvailable":${points.limit},"currentlyAvailable":${points.remaining},"restoreRate":${restoreRateOf(points)},"resetSeconds":${points.resetSeconds},"windowSeconds":${points.windowSeconds}}}`;
    if (body.startsWith(EXTENSIONS_FIRST)) {
      const rest = body.slice(EXTENSIONS_FIRST.length);
      return `${EXTENSIONS_FIRST}${cost}${rest.startsWith('}') ? '' : ','}${rest}`;
    }
    // Otherwise the answer has no extensions of its own: they go last, where readers look for them.
    const end = body.lastIndexOf('}');
    if (!body.startsWith('{') || end < 0) return body; // not a JSON object (never from Apollo): left as it is
    return `${body.slice(0, end)}${body.slice(1, end).trim() ? ',' : ''}"extensions":{${cost}}${body.slice(end)}`;
  }
}

const EXTENSIONS_FIRST = '{"extensions":{';

/**
 * Apollo's `stringifyResult` when the limits are on: a result's own `extensions` (should a plugin
 * ever set some) go first, where `withCost` finds them and adds the cost to them instead of writing
 * a second `extensions` key. Otherwise what Apollo writes: errors, then data.
 */
export function stringifyResultExtensionsFirst(result: { errors?: unknown; data?: unknown; extensions?: unknown }): string {
  return JSON.stringify(result.extensions === undefined ? { errors: result.errors, data: result.data } : { extensions: result.extensions, errors: result.errors, data: result.data });
}
