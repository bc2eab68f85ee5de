import { tasks } from '../application/tasks';
import { runTaskConsistently, type TaskContext } from '../application/tasks/context';
import { withIdempotency } from '../application/idempotency';
import { parseInput } from '../application/validation';
import { canonicalRequest } from '../wire/requests';
import { REQUEST_RULES } from '../wire/requests-by-release';
import type { AdcpRelease } from '../wire/version';

type Obj = Record<string, unknown>;

/**
 * Runs one of the application's tasks for a caller served in `release` (MCP, A2A, REST with a
 * version): the release's request rules first, then the task; a read the release replays by its
 * `idempotency_key` (3.1: get_products) runs under application/idempotency.ts, so the same key
 * and payload answer as the first call did (`replayed: true`), and the same key with another
 * payload is IDEMPOTENCY_CONFLICT. The request is validated before any replay is looked up.
 */
export async function runTaskInRelease(name: string, args: Obj, ctx: TaskContext, release: AdcpRelease): Promise<Obj> {
  const rules = REQUEST_RULES[release];
  rules.check(name, args);
  const task = tasks[name]!;
  const request = canonicalRequest(name, args);
  const key = args.idempotency_key;
  if (!rules.keyedReads.has(name) || typeof key !== 'string') return runTaskConsistently(task, request, ctx);
  parseInput(task.input, request);
  return withIdempotency(ctx.ports.store, ctx.principal.org, name, { ...request, idempotency_key: key }, () => runTaskConsistently(task, request, ctx));
}
