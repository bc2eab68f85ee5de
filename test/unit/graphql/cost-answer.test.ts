import type { FastifyReply, FastifyRequest } from 'fastify';
import { stringifyResultExtensionsFirst, withCost } from '../../../src/graphql/cost-limits';
import type { ResourceLimits } from '../../../src/config';
import type { BudgetVerdict, SharedBudgets } from '../../../src/limits/shared-budgets';

describe('extensions.cost written into Apollo’s answer', () => {
  const limits = { graphql: { maxCost: 1000, maxDepth: 10, pointsPerMinute: { anonymous: 100, buyer: 500, seller: 500, admin: 500 } } } as unknown as ResourceLimits;
  const points: BudgetVerdict = { allowed: true, limit: 500, remaining: 440, resetSeconds: 12, windowSeconds: 60 };
  const budgets = {} as SharedBudgets; // never asked: the request carries its points
  let headers: Record<string, string> = {};
  const reply = { header: (name: string, value: string) => ((headers[name] = value), reply) } as unknown as FastifyReply;
  beforeEach(() => (headers = {}));
  const answer = (result: { errors?: unknown; data?: unknown; extensions?: unknown }, requested: number | null, left = points, requestBudget: BudgetVerdict | null = null) => {
    const req = { pointsLeft: left, operationPrice: requested === null ? null : { total: requested }, requestBudget } as unknown as FastifyRequest;
    return JSON.parse(withCost(limits, budgets)(req, reply, stringifyResultExtensionsFirst(result)) as string) as Record<string, unknown>;
  };
  const throttleStatus = { maximumAvailable: 500, currentlyAvailable: 440, restoreRate: 8.33, resetSeconds: 12, windowSeconds: 60 };
  const cost = (requested: number | null) => ({ requested, actual: requested ?? 0, maximum: 1000, throttleStatus });

  it('adds the price and the points to data and to errors, Shopify’s way: no RateLimit headers while the budgets are roomy', () => {
    expect(answer({ data: { a: 1 } }, 60)).toEqual({ data: { a: 1 }, extensions: { cost: cost(60) } });
    expect(answer({ errors: [{ message: 'no' }] }, null)).toEqual({ errors: [{ message: 'no' }], extensions: { cost: cost(null) } });
    expect(headers).toEqual({});
  });

  it('writes the RateLimit headers, both budgets, once either has less than a tenth left', () => {
    const requests: BudgetVerdict = { allowed: true, limit: 3000, remaining: 2000, resetSeconds: 12, windowSeconds: 60 };
    // 50 of 500 points is a tenth exactly: not yet.
    answer({ data: { a: 1 } }, 5, { ...points, remaining: 50 }, requests);
    expect(headers).toEqual({});
    const low = answer({ data: { a: 1 } }, 5, { ...points, remaining: 49 }, requests);
    expect(low).toEqual({ data: { a: 1 }, extensions: { cost: { ...cost(5), throttleStatus: { ...throttleStatus, currentlyAvailable: 49 } } } });
    expect(headers).toEqual({ 'ratelimit-policy': '"requests";q=3000;w=60, "graphql-points";q=500;w=60', ratelimit: '"requests";r=2000;t=12, "graphql-points";r=49;t=12' });
    headers = {};
    answer({ data: { a: 1 } }, 5, points, { ...requests, remaining: 299 });
    expect(headers.ratelimit).toBe('"requests";r=299;t=12, "graphql-points";r=440;t=12');
  });

  it('writes the cost last, also into a body Apollo wrote itself (its HTTP-level errors end with a newline)', () => {
    const req = { pointsLeft: points, operationPrice: null, requestBudget: null } as unknown as FastifyRequest;
    const written = withCost(limits, budgets)(req, reply, '{"errors":[{"message":"bad"}]}\n') as string;
    expect(written.endsWith('}}}}\n')).toBe(true);
    expect(JSON.parse(written)).toEqual({ errors: [{ message: 'bad' }], extensions: { cost: cost(null) } });
    const data = withCost(limits, budgets)(req, reply, stringifyResultExtensionsFirst({ data: { a: 1 } })) as string;
    expect(Object.keys(JSON.parse(data) as object)).toEqual(['data', 'extensions']);
  });

  it('joins extensions the result already has instead of writing a second key', () => {
    expect(answer({ data: { a: 1 }, extensions: { trace: 'x' } }, 5)).toEqual({ data: { a: 1 }, extensions: { cost: cost(5), trace: 'x' } });
    expect(answer({ data: null, extensions: {} }, 5)).toEqual({ data: null, extensions: { cost: cost(5) } });
  });
});
