import type { FastifyReply, FastifyRequest } from 'fastify';
import { stringifyResultExtensionsFirst, withCost } from '../../../src/graphql/cost-limits';
import type { ResourceLimits } from '../../../src/config';
import type { BudgetVerdict, SharedBudgets } from '../../../src/limits/shared-budgets';

describe('extensions.cost written into Apollo’s answer', () => {
  const limits = { graphql: { maxCost: 1000, maxDepth: 10, pointsPerMinute: { anonymous: 100, buyer: 500, seller: 500, admin: 500 } } } as unknown as ResourceLimits;
  const points: BudgetVerdict = { allowed: true, limit: 500, remaining: 440, resetSeconds: 12, windowSeconds: 60 };
  const budgets = {} as SharedBudgets; // never asked: the request carries its points
  const headers: Record<string, string> = {};
  const reply = { header: (name: string, value: string) => ((headers[name] = value), reply) } as unknown as FastifyReply;
  const answer = (result: { errors?: unknown; data?: unknown; extensions?: unknown }, requested: number | null) => {
    const req = { pointsLeft: points, operationPrice: requested === null ? null : { total: requested }, requestBudget: null } as unknown as FastifyRequest;
    return JSON.parse(withCost(limits, budgets)(req, reply, stringifyResultExtensionsFirst(result)) as string) as Record<string, unknown>;
  };
  const cost = (requested: number | null) => ({ requested, maximum: 1000, budget: { limit: 500, remaining: 440, resetSeconds: 12, windowSeconds: 60 } });

  it('adds the price and the points to data and to errors, with the RateLimit headers', () => {
    expect(answer({ data: { a: 1 } }, 60)).toEqual({ data: { a: 1 }, extensions: { cost: cost(60) } });
    expect(answer({ errors: [{ message: 'no' }] }, null)).toEqual({ errors: [{ message: 'no' }], extensions: { cost: cost(null) } });
    expect(headers).toEqual({ 'ratelimit-policy': '"graphql-points";q=500;w=60', ratelimit: '"graphql-points";r=440;t=12' });
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
