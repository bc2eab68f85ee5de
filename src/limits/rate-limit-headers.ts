import type { BudgetVerdict } from './shared-budgets';

// `"name";q=limit;w=window` for each budget in force: a few strings, made once each (keyed by
// name, then limit: no key string to build per request).
const policies = new Map<string, Map<number, { windowSeconds: number; policy: string }>>();
function policyOf(name: string, v: BudgetVerdict): string {
  let byLimit = policies.get(name);
  if (!byLimit) policies.set(name, (byLimit = new Map()));
  const known = byLimit.get(v.limit);
  if (known?.windowSeconds === v.windowSeconds) return known.policy;
  const policy = `"${name}";q=${v.limit};w=${v.windowSeconds}`;
  if (byLimit.size < 100) byLimit.set(v.limit, { windowSeconds: v.windowSeconds, policy });
  return policy;
}

/**
 * `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers) for one budget, or
 * two: what each allows per window, and what is left of it and for how long.
 */
export function rateLimitHeaderValues(name: string, v: BudgetVerdict, secondName?: string, second?: BudgetVerdict): [policy: string, state: string] {
  // Plain concatenation, no arrays: this runs on every counted request.
  let policy = policyOf(name, v);
  let state = `"${name}";r=${v.remaining};t=${v.resetSeconds}`;
  if (secondName !== undefined && second) {
    policy += `, ${policyOf(secondName, second)}`;
    state += `, "${secondName}";r=${second.remaining};t=${second.resetSeconds}`;
  }
  return [policy, state];
}

/**
 * Less than a tenth of the budget is left: the point from which GraphQL answers carry the
 * `RateLimit` headers (Shopify's way: a client reads `extensions.cost` on every answer, and the
 * headers only when it should slow down or has been refused).
 */
export function runningLow(v: BudgetVerdict): boolean {
  return v.remaining * 10 < v.limit;
}

/**
 * The GraphQL binding's paths (`/graphql`, its SSE stream, its WebSocket upgrade): their answers
 * carry the `RateLimit` headers only on a refusal or with less than a tenth of a budget left.
 * REST, MCP and A2A carry them on every answer (GitHub's way).
 */
export function isGraphqlPath(url: string): boolean {
  return url.startsWith('/graphql') && (url.length === 8 || url[8] === '/' || url[8] === '?');
}
