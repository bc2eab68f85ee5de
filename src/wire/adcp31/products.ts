import type { AnswerContext } from '../answer-codec';
import { answer3 } from '../adcp3/answers';

type Obj = Record<string, any>;

/**
 * get_products in 3.1: the 3.0 answer plus `cache_scope`, which 3.1.19 requires on every answer
 * that carries products. The task says which it is: `public` when the answer is the published
 * catalog (no account, or an account that buys off it), `account` when the account sees its own
 * (a sandbox account's test world), so a buyer never serves one account's answer to another.
 */
export function products31(result: Obj, ctx: AnswerContext): Obj {
  // A curation the seller queued (a sandbox's forced submitted arm) carries no products yet.
  if (result.status === 'pending') return answer3('get_products', result, ctx);
  return { ...answer3('get_products', result, ctx), cache_scope: result.cache_scope === 'account' ? 'account' : 'public' };
}
